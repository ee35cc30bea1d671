#!/usr/bin/env python3
"""The GPU run: e2e checks and benchmarks of the libraries prepare.py built.

Runs on the GPU machine (needs only python3 with numpy; torch for the
benchmark peers), from the artifacts directory prepare.py wrote:

1. Device check: gatec-run --device=cuda loads a model; without a driver or
   GPU it prints the runtime's reason and the script exits 1.
2. e2e: every committed model's library runs on the device with the inputs
   prepared here and must match onnxruntime's outputs (computed at prepare
   time): fp32 max |error| <= tol * (1 + |ref|), tol = 2e-4 (the GPU sums in
   another order and uses libdevice's exp/tanh).
3. Benchmark (when torch is importable): each block of bench_modules.py at
   every prepared (batch, seq): gatec-run --benchmark (median; the time
   includes copying x to the device and y back, as a model library does per
   run) against PyTorch eager and torch.compile on the same weights and
   input, timed both with the data already on the device and with the same
   host<->device copies; the outputs are compared too. Prints ratios
   (< 1: gatec faster), achieved TFLOP/s and GB/s against the peaks measured
   in the same run (fp32 GEMM with TF32 off, bf16 GEMM, device-to-device
   copy), and the gate's overhead (gated / ungated block time).

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
        cmd = [os.path.join(art, m[device]), "--atol=%g" % tol, "--rtol=%g" % tol]
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
    print("e2e on %s: %d models, %d failures" % (device, len(man["e2e"]), failures))
    return failures


def block_flops(b, t, d, h):
    dh = d // h
    proj = 2 * b * t * d * (3 * d) + 2 * b * t * d * d * 2  # qkv, gate, out
    attn = 2 * 2 * b * h * dh * t * (t + 1) / 2             # causal QK^T and PV
    return proj + attn


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
    hdr = ("%-20s %5s %9s %9s %9s %9s %9s %6s %6s %8s %8s" %
           ("block", "seq", "gatec ms", "eager ms", "e+copy", "compile", "c+copy",
            "g/eag", "g/cmp", "TFLOP/s", "GB/s"))
    print(hdr)
    for blk in man["bench"]:
        name = blk["name"]
        m = bm.build(name, for_export=False)
        w = np.load(os.path.join(art, blk["weights"]))
        m.load_state_dict({k: torch.from_numpy(w[k]) for k in w.files}, strict=False)
        m = m.to(dev)
        comp = torch.compile(m)
        wbytes = sum(v.nbytes for v in (w[k] for k in w.files))
        for t, seed in blk["inputs"]:
            xh = np.random.default_rng(seed).standard_normal(
                (blk["batch"], t, blk["d_model"])).astype(np.float32)
            xp = "/tmp/gatec_bench_x_%d.npy" % t
            np.save(xp, xh)
            b, d = xh.shape[0], blk["d_model"]
            r = gatec_run(art, [os.path.join(art, blk[device]), "--input=x=@" + xp,
                                "--benchmark=%d" % runs, "--output=y=@/tmp/gatec_bench_y.npy"], device)
            mm = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
            if r.returncode != 0 or not mm:
                failures += 1
                print("FAIL %s seq %d: %s" % (name, t, (r.stdout + r.stderr).strip()[-300:]))
                continue
            g_ms = float(mm.group(1))
            xt_host = torch.from_numpy(xh)
            xt = xt_host.to(dev)
            y_ref = m(xt).cpu().numpy()
            y = np.load("/tmp/gatec_bench_y.npy")
            err = float(np.max(np.abs(y - y_ref) / (1 + np.abs(y_ref))))
            if err > 1e-3:
                failures += 1
                print("FAIL %s seq %d: output differs from PyTorch's (max scaled error %.2e)"
                      % (name, t, err))
            e_ms = timed(lambda: m(xt), runs)
            ec_ms = timed(lambda: m(xt_host.to(dev)).cpu(), runs)
            c_ms = timed(lambda: comp(xt), runs)
            cc_ms = timed(lambda: comp(xt_host.to(dev)).cpu(), runs)
            fl = block_flops(b, t, d, blk["heads"])
            by = wbytes + 2 * xh.nbytes
            tf, gbs = fl / g_ms / 1e9, by / g_ms / 1e6
            times[(name, t)] = (g_ms, ec_ms, cc_ms)
            print("%-20s %5d %9.3f %9.3f %9.3f %9.3f %9.3f %6.2f %6.2f %8.2f %8.1f" %
                  (name, t, g_ms, e_ms, ec_ms, c_ms, cc_ms, g_ms / ec_ms, g_ms / cc_ms, tf, gbs),
                  flush=True)
            if peaks:
                print("%-20s %5s achieved %.2f%% of the fp32 GEMM peak, %.3f%% of the copy "
                      "bandwidth; max scaled error vs PyTorch %.1e" %
                      ("", "", 100 * tf / peaks["fp32 GEMM"], 100 * gbs / peaks["copy"], err))
    for (name, t), (g, e, c) in sorted(times.items()):
        if name == "bench_gated_attn" and ("bench_ungated_attn", t) in times:
            ug, ue, uc = times[("bench_ungated_attn", t)]
            print("gate overhead at seq %d (gated / ungated - 1): gatec %+.1f%%, "
                  "eager %+.1f%%, torch.compile %+.1f%%" %
                  (t, 100 * (g / ug - 1), 100 * (e / ue - 1), 100 * (c / uc - 1)))
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
