#!/usr/bin/env python3
"""The GPU run: e2e checks and benchmarks of the libraries prepare.py built.

Runs on the GPU machine (needs only python3 with numpy; torch for the
benchmark peers), from the artifacts directory prepare.py wrote:

1. Device check: gatec-run --device=cuda loads a model; without a driver or
   GPU it prints the runtime's reason and the script exits 1.
2. e2e: every committed model's library runs on the device with the inputs
   prepared here and must match onnxruntime's outputs (computed at prepare
   time): fp32 max |error| <= tol * (1 + |ref|), tol = 2e-4 (the GPU sums in
   another order and uses libdevice's exp/tanh). The fp16/bf16 variants
   (test/scripts/low_precision.py) compare with onnxruntime's fp32 outputs
   on the same values rounded to the type, with that script's tolerances
   (2**-9 fp16, 2**-6 bf16), the same as on the CPU; so do their *_mma
   libraries (--gpu-mma: the GEMMs as mma.sync on the tensor cores, which
   only a GPU checks for real).
3. Benchmark (when torch is importable): each block of
   bench_modules.BLOCKS (gated and ungated attention blocks, attention alone
   against torch's SDPA with and without the G1 gate, chunked gated linear
   attention, a bf16 SwiGLU FFN with and without --gpu-mma) at every
   prepared (batch, seq): gatec-run --benchmark (median;
   the time includes copying the inputs to the device and the output back,
   as a model library does per run) against PyTorch eager and torch.compile
   on the same weights and inputs, timed both with the data already on the
   device and with the same host<->device copies (the ratios use the
   latter); the outputs are compared too (max |error| / (1 + |ref|) <=
   1e-3; 2**-4 for the bf16 blocks, where PyTorch rounds at other points). bench_gla is also timed against
   flash-linear-attention's chunk_simple_gla where it is installed. Prints
   ratios (< 1: gatec faster), achieved TFLOP/s and GB/s against the peaks
   measured in the same run (fp32 GEMM with TF32 off, bf16 GEMM,
   device-to-device copy), the gate's overhead (gated / ungated time, for
   the block and for attention alone) and the tensor cores' gain (--gpu-mma
   / default time).

--device=cpu runs the same steps on the CPU libraries (the dry run on a
machine without a GPU: checks the artifacts and the script).

usage: run_gpu.py [--artifacts DIR] [--device cuda|cpu] [--runs N]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def gatec_run(art, args, device):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(art, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")
    return subprocess.run([os.path.join(art, "bin", "gatec-run")] + args +
                          ["--device=" + device], capture_output=True, text=True, env=env)


def e2e(art, man, device):
    tol = man["fp32_tol"]
    failures = 0
    for m in man["e2e"]:
        t = m.get("tol", tol)
        cmd = [os.path.join(art, m[device]), "--atol=%g" % t, "--rtol=%g" % t]
        cmd += ["--input=%s=@%s" % (n, os.path.join(art, p)) for n, p in m["inputs"]]
        cmd += ["--expected-output=%s=@%s" % (n, os.path.join(art, p)) for n, p in m["outputs"]]
        r = gatec_run(art, cmd, device)
        errs = [float(x) for x in re.findall(r"max \|error\| ([0-9.eE+-]+)", r.stdout + r.stderr)]
        if r.returncode == 0:
            print("ok   %-30s max error %.2e" % (m["name"], max(errs or [0.0])), flush=True)
        else:
            failures += 1
            last = (r.stdout + r.stderr).strip().splitlines()
            print("FAIL %-30s %s" % (m["name"], last[-1] if last else r.returncode), flush=True)
    print("e2e on %s: %d runs, %d failures" % (device, len(man["e2e"]), failures))
    return failures


def bench(art, man, device, runs):
    try:
        import torch
    except ImportError:
        print("benchmark: no torch in this Python: skipped")
        return 0
    sys.path.insert(0, HERE)
    import bench_modules as bm
    dev = "cuda" if device == "cuda" else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        print("benchmark: torch sees no GPU: skipped")
        return 1
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    def timed(fn, n):
        for _ in range(3):
            fn()
        sync()
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            sync()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)

    peaks = {}
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        n = 8192
        for dt, key in ((torch.float32, "fp32 GEMM"), (torch.bfloat16, "bf16 GEMM")):
            a = torch.randn(n, n, device=dev, dtype=dt)
            ms = timed(lambda: a @ a, 10)
            peaks[key] = 2 * n ** 3 / ms / 1e9  # TFLOP/s
        src = torch.empty(2 ** 30, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        ms = timed(lambda: dst.copy_(src), 20)
        peaks["copy"] = 2 * 2 ** 30 / ms / 1e6  # GB/s, read + write
        print("peaks measured now: fp32 GEMM %.1f TFLOP/s, bf16 GEMM %.1f TFLOP/s, "
              "device copy %.0f GB/s" % (peaks["fp32 GEMM"], peaks["bf16 GEMM"], peaks["copy"]))
    torch.set_grad_enabled(False)
    times = {}
    failures = 0
    hdr = ("%-22s %5s %9s %9s %9s %9s %9s %6s %6s %8s %8s" %
           ("block", "seq", "gatec ms", "eager ms", "e+copy", "compile", "c+copy",
            "g/eag", "g/cmp", "TFLOP/s", "GB/s"))
    print(hdr)
    for blk in man["bench"]:
        name = blk["name"]
        spec = bm.BLOCKS[name]
        m = bm.build(name, for_export=False)
        w = np.load(os.path.join(art, blk["weights"]))
        m.load_state_dict({(k[:-len(bm.BF16_BITS)] if k.endswith(bm.BF16_BITS) else k):
                           (torch.from_numpy(w[k]).view(torch.bfloat16)
                            if k.endswith(bm.BF16_BITS) else torch.from_numpy(w[k]))
                           for k in w.files}, strict=False)
        m = m.to(dev)
        comp = torch.compile(m)
        extra, why = spec["extra_peer"]() if "extra_peer" in spec else (None, None)
        if why:
            print("%-22s %s" % (name, why))
        wbytes = sum(v.nbytes for v in (w[k] for k in w.files))
        for t, seed in blk["inputs"]:
            xs = bm.draw_inputs(name, blk["batch"], t, seed)
            args = [os.path.join(art, blk[device]), "--benchmark=%d" % runs]
            for n, a in xs.items():
                np.save("/tmp/gatec_bench_%s_%d.npy" % (n, t), a)
                args.append("--input=%s=@/tmp/gatec_bench_%s_%d.npy" % (n, n, t))
            out_name = "output" if spec["export"] is None else "y"
            args.append("--output=%s=@/tmp/gatec_bench_y.npy" % out_name)
            r = gatec_run(art, args, device)
            mm = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
            if r.returncode != 0 or not mm:
                failures += 1
                print("FAIL %s seq %d: %s" % (name, t, (r.stdout + r.stderr).strip()[-300:]))
                continue
            g_ms = float(mm.group(1))
            host = [torch.from_numpy(a) for a in xs.values()]
            on_dev = [a.to(dev) for a in host]
            y_ref = m(*on_dev).cpu().numpy()
            y = np.load("/tmp/gatec_bench_y.npy")
            err = float(np.max(np.abs(y - y_ref) / (1 + np.abs(y_ref))))
            if err > spec.get("tol", 1e-3):
                failures += 1
                print("FAIL %s seq %d: output differs from PyTorch's (max scaled error %.2e)"
                      % (name, t, err))
            e_ms = timed(lambda: m(*on_dev), runs)
            ec_ms = timed(lambda: m(*(a.to(dev) for a in host)).cpu(), runs)
            c_ms = timed(lambda: comp(*on_dev), runs)
            cc_ms = timed(lambda: comp(*(a.to(dev) for a in host)).cpu(), runs)
            fl = spec["flops"](blk["batch"], t)
            by = wbytes + sum(a.nbytes for a in xs.values()) + y.nbytes
            tf, gbs = fl / g_ms / 1e9, by / g_ms / 1e6
            times[(name, t)] = (g_ms, ec_ms, cc_ms)
            print("%-22s %5d %9.3f %9.3f %9.3f %9.3f %9.3f %6.2f %6.2f %8.2f %8.1f" %
                  (name, t, g_ms, e_ms, ec_ms, c_ms, cc_ms, g_ms / ec_ms, g_ms / cc_ms, tf, gbs),
                  flush=True)
            if peaks:
                pk = spec.get("peak", "fp32 GEMM")
                print("%-22s %5s achieved %.2f%% of the %s peak, %.3f%% of the copy "
                      "bandwidth; max scaled error vs PyTorch %.1e" %
                      ("", "", 100 * tf / peaks[pk], pk, 100 * gbs / peaks["copy"], err))
            if extra is not None:
                try:
                    y_x = extra(*on_dev).float().cpu().numpy()
                    x_ms = timed(lambda: extra(*on_dev), runs)
                    xc_ms = timed(lambda: extra(*(a.to(dev) for a in host)).cpu(), runs)
                    print("%-22s %5d flash-linear-attention %.3f ms (%.3f with copies): "
                          "gatec / fla %.2f; max scaled difference %.1e" %
                          (name, t, x_ms, xc_ms, g_ms / xc_ms,
                           float(np.max(np.abs(y_x - y_ref) / (1 + np.abs(y_ref))))))
                except Exception as e:  # a peer that cannot run here is reported, not fatal
                    print("%-22s %5d flash-linear-attention failed: %s" % (name, t, e))
    for (name, t), (g, e, c) in sorted(times.items()):
        base = name[:-len("_mma")] if name.endswith("_mma") else None
        if base and (base, t) in times:
            print("tensor cores, %s at seq %d: --gpu-mma / default %.2f" %
                  (base, t, g / times[(base, t)][0]))
    for gated, ungated in (("bench_gated_attn", "bench_ungated_attn"),
                           ("bench_sdpa_gated", "bench_sdpa")):
        for (name, t), (g, e, c) in sorted(times.items()):
            if name == gated and (ungated, t) in times:
                ug, ue, uc = times[(ungated, t)]
                print("gate overhead, %s at seq %d (gated / ungated - 1): gatec %+.1f%%, "
                      "eager %+.1f%%, torch.compile %+.1f%%" %
                      (ungated, t, 100 * (g / ug - 1), 100 * (e / ue - 1), 100 * (c / uc - 1)))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", default=os.path.join(ROOT, "build", "gpu-artifacts"))
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--no-bench", action="store_true")
    args = ap.parse_args()
    art = os.path.abspath(args.artifacts)
    with open(os.path.join(art, "manifest.json")) as f:
        man = json.load(f)
    first = man["e2e"][0] if man["e2e"] else man["bench"][0]
    r = gatec_run(art, [os.path.join(art, first[args.device]), "--print-signature"], args.device)
    if r.returncode != 0:
        print("run_gpu: %s" % (r.stdout + r.stderr).strip())
        return 1
    print("device %s: %s" % (args.device, r.stdout.strip().splitlines()[0] if r.stdout else ""))
    failures = e2e(art, man, args.device)
    if not args.no_bench:
        failures += bench(art, man, args.device, args.runs)
    print("run_gpu: %d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
