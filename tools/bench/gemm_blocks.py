#!/usr/bin/env python3
"""Benchmark: GEMM-bound blocks at realistic width (d=1024) — gatec's
compiled library vs onnxruntime, OpenVINO and IREE (where installed:
pip install -r tools/bench/requirements.txt), same inputs, same thread
count, several sequence lengths, in one run.

Models (built here with onnx.helper; random weights; dynamic batch, seq):
  matmul      y = x · W                       (1024 x 2816)
  swiglu_ffn  y = (silu(x·Wg) * (x·Wu)) · Wd  (1024 -> 2816 -> 1024)
  proj_block  RMSNorm, q/k/v projections summed, output projection,
              residual, SwiGLU FFN, residual (the large_model_import layer)
  gated_attn  q/k/v/gate projections, causal GQA Attention-23 (16/4 heads,
              dh 64), the G1 gate sigmoid(x·Wg), output projection
  llama_block RMSNorm, q/k/v, RoPE (RotaryEmbedding-23), causal GQA
              Attention-23, output projection, residual, RMSNorm, SwiGLU
              FFN, residual
  llama_4layer  four llama_blocks (not in the default --models)

For each: the min and median time of gatec-run --benchmark=N, of N
onnxruntime runs and of N OpenVINO runs (CPU plugin, f32 precision hint,
latency hint, one stream; each in its own process), the ratio gatec/peer
for the faster peer (< 1: gatec faster), gatec's achieved GFLOP/s and its share of the machine's
fp32 peak. The peak is computed from the vector units and the clock:
  cores x GHz x (vector bits / 32) lanes x 2 (FMA) x FMA ports
with the clock from /proc/cpuinfo (a VM reports its nominal clock; pass
--ghz to use another) and 2 FMA ports for AVX-512 Xeons (--fma-ports).
Outputs (gatec's and OpenVINO's) are checked against onnxruntime (max
|error| printed). Not a test.

usage: gemm_blocks.py [--threads 1] [--runs 12] [--rounds 2] [--seqs 128,512,2048]
                      [--models matmul,swiglu_ffn,proj_block,gated_attn,llama_block]
                      [--gatec-flags "--cpu-micro-kernels=false"]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "build", "bin")

D, F = 1024, 2816


def build(name, path):
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def w(n, shape):
        a = rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array(a.astype(np.float32), n))
        return n

    def node(op, ins, out, **kw):
        nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
        return out

    def ffn(x, p=""):
        g = node("MatMul", [x, w(p + "wg", [D, F])], p + "g")
        u = node("MatMul", [x, w(p + "wu", [D, F])], p + "u")
        s = node("Sigmoid", [g], p + "sg")
        silu = node("Mul", [g, s], p + "silu")
        h = node("Mul", [silu, u], p + "h")
        return node("MatMul", [h, w(p + "wd", [F, D])], p + "ffn")

    flops = 0
    if name == "matmul":
        node("MatMul", ["x", w("w", [D, F])], "y")
        flops = 2 * D * F
    elif name == "swiglu_ffn":
        node("Identity", [ffn("x")], "y")
        flops = 2 * 3 * D * F
    elif name == "proj_block":
        n = node("RMSNormalization", ["x", w("norm", [D])], "n", epsilon=1e-6)
        q = node("MatMul", [n, w("wq", [D, D])], "q")
        k = node("MatMul", [n, w("wk", [D, D])], "k")
        v = node("MatMul", [n, w("wv", [D, D])], "v")
        qk = node("Add", [q, k], "qk")
        qkv = node("Add", [qk, v], "qkv")
        o = node("MatMul", [qkv, w("wo", [D, D])], "o")
        h = node("Add", ["x", o], "h1")
        node("Add", [h, ffn(h, "f_")], "y")
        flops = 2 * (4 * D * D + 3 * D * F)
    elif name in ("gated_attn", "llama_block", "llama_4layer"):
        # GQA attention (16 query heads, 4 KV heads, head dim 64, causal) as
        # ONNX Attention-23; llama_block adds RMSNorms, RoPE
        # (RotaryEmbedding-23, positions 0..seq-1 built in the graph), the
        # residuals and the SwiGLU FFN; gated_attn has the Qwen3-Next G1
        # output gate sigmoid(x·Wg) instead; llama_4layer is 4 llama_blocks.
        hq, hkv, dh = 16, 4, 64
        llama = name != "gated_attn"
        if llama:
            inv = 1.0 / (10000 ** (np.arange(0, dh, 2) / dh))
            ang = np.arange(4096)[:, None] * inv[None, :]
            inits.append(numpy_helper.from_array(np.cos(ang).astype(np.float32), "cos"))
            inits.append(numpy_helper.from_array(np.sin(ang).astype(np.float32), "sin"))
            for c, val in [("zero", 0), ("one", 1)]:
                inits.append(numpy_helper.from_array(np.array(val, np.int64), c))
            inits.append(numpy_helper.from_array(np.array([0], np.int64), "ax0"))
            shp = node("Shape", ["x"], "shp")
            seq = node("Gather", [shp, "one"], "seq", axis=0)
            rng_ = node("Range", ["zero", seq, "one"], "pos")
            pos = node("Unsqueeze", [rng_, "ax0"], "pos_ids")

        def block(x_in, p):
            x = x_in
            if llama:
                x = node("RMSNormalization", [x_in, w(p + "norm1", [D])], p + "n1",
                         epsilon=1e-6)
            q = node("MatMul", [x, w(p + "wq", [D, hq * dh])], p + "q")
            k = node("MatMul", [x, w(p + "wk", [D, hkv * dh])], p + "k")
            v = node("MatMul", [x, w(p + "wv", [D, hkv * dh])], p + "v")
            if llama:
                q = node("RotaryEmbedding", [q, "cos", "sin", pos], p + "q_rope",
                         num_heads=hq)
                k = node("RotaryEmbedding", [k, "cos", "sin", pos], p + "k_rope",
                         num_heads=hkv)
            a = node("Attention", [q, k, v], p + "attn", q_num_heads=hq,
                     kv_num_heads=hkv, is_causal=1)
            if not llama:
                g = node("MatMul", [x_in, w(p + "wg", [D, hq * dh])], p + "g")
                a = node("Mul", [a, node("Sigmoid", [g], p + "sg")], p + "gated")
            o = node("MatMul", [a, w(p + "wo", [hq * dh, D])], p + "o")
            if not llama:
                return o
            h = node("Add", [x_in, o], p + "h1")
            n2 = node("RMSNormalization", [h, w(p + "norm2", [D])], p + "n2",
                      epsilon=1e-6)
            return node("Add", [h, ffn(n2, p + "f_")], p + "out")

        layers = 4 if name == "llama_4layer" else 1
        x = "x"
        for l in range(layers):
            x = block(x, "l%d_" % l if layers > 1 else "")
        node("Identity", [x], "y")
        flops = 2 * D * (hq + 2 * hkv) * dh + 2 * hq * dh * D
        if llama:
            flops += 2 * 3 * D * F
        else:
            flops += 2 * D * hq * dh
        # Per row, plus the causal attention's 2 * 2 * T/2 * dh * hq per row
        # (added by the caller, which knows T).
        flops = (layers * flops, layers * 2 * hq * dh)
    else:
        sys.exit("unknown model " + name)
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                       ["batch", "seq", F if name == "matmul" else D])],
        initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    onnx.save(m, path)
    return flops


ORT_CHILD = r"""
import sys, time, numpy as np, onnxruntime as ort
model, x, threads, runs, out = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
feed = {s.get_inputs()[0].name: x}
for _ in range(3): y = s.run(None, feed)[0]
np.save(out, y)
t = []
for _ in range(runs):
    a = time.perf_counter(); s.run(None, feed); t.append(time.perf_counter() - a)
print("min_ms", 1e3 * float(np.min(t)), "median_ms", 1e3 * float(np.median(t)))
"""


OV_CHILD = r"""
import sys, time, numpy as np, openvino as ov
model, x, threads, runs, out = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
core = ov.Core()
c = core.compile_model(core.read_model(model), "CPU", {
    "INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
    "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
r = c.create_infer_request()
for _ in range(3): r.infer({0: x})
np.save(out, r.get_output_tensor(0).data.copy())
t = []
for _ in range(runs):
    a = time.perf_counter(); r.infer({0: x}); t.append(time.perf_counter() - a)
print("min_ms", 1e3 * float(np.min(t)), "median_ms", 1e3 * float(np.median(t)))
"""


# IREE (iree-base-compiler / iree-base-runtime from the package index): the
# model imported with iree-import-onnx and compiled by iree-compile for the
# llvm-cpu backend and this CPU; run in a child on the local-sync driver (1
# thread) or local-task with --threads workers.
IREE_CHILD = r"""
import sys, time, numpy as np
import iree.runtime as rt
vmfb, xp, threads, runs, outp = sys.argv[1:6]
threads, runs = int(threads), int(runs)
if threads > 1:
    rt.flags.parse_flags("--task_topology_group_count=%d" % threads)
ctx = rt.SystemContext(config=rt.Config("local-task" if threads > 1 else "local-sync"))
with open(vmfb, "rb") as f:
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, f.read()))
mod = ctx.modules.module
fn = mod[[n for n in mod.vm_module.function_names
          if not n.startswith("__") and "$async" not in n][0]]
x = np.load(xp)
np.save(outp, fn(x).to_host())
t = []
for _ in range(runs):
    a = time.perf_counter(); fn(x).to_host(); t.append(time.perf_counter() - a)
print("min_ms", 1e3 * float(np.min(t)), "median_ms", 1e3 * float(np.median(t)))
"""


def iree_compile(onnx_path, vmfb):
    """None, or why IREE cannot compile the model (first line of its error)."""
    bindir = os.path.dirname(sys.executable)
    imp, comp = os.path.join(bindir, "iree-import-onnx"), os.path.join(bindir, "iree-compile")
    if not (os.path.exists(imp) and os.path.exists(comp)):
        return "not installed"
    mlir = vmfb + ".mlir"
    for cmd in ([imp, onnx_path, "-o", mlir],
                [comp, mlir, "--iree-hal-target-device=local",
                 "--iree-hal-local-target-device-backends=llvm-cpu",
                 "--iree-llvmcpu-target-cpu=host", "-o", vmfb]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            text = p.stderr + p.stdout
            op = re.search(r'name = "(onnx\.\w+)"', text)
            if op:
                return "%s does not lower to IREE (%s)" % (op.group(1), os.path.basename(cmd[0]))
            err = [l for l in text.splitlines() if "error" in l]
            return (err[0] if err else "failed")[:160]
    return None


def have_openvino():
    return subprocess.run([sys.executable, "-c", "import openvino"],
                          capture_output=True).returncode == 0


def stat_of(out, key):
    """The number after `key` ('min' or 'median'; gatec-run: 'min 38.7 ms,
    median 40.3 ms'; the onnxruntime child: 'min_ms 38.7 median_ms 40.3')."""
    for line in out.splitlines():
        toks = line.replace(",", " ").split()
        for i, tok in enumerate(toks[:-1]):
            if tok.startswith(key):
                return float(toks[i + 1])
    raise RuntimeError("no median in:\n" + out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=2,
                    help="each engine is measured once per round, the order "
                         "reversed every other round")
    ap.add_argument("--seqs", default="128,512,2048")
    ap.add_argument("--models",
                    default="matmul,swiglu_ffn,proj_block,gated_attn,llama_block")
    ap.add_argument("--ghz", type=float, default=0)
    ap.add_argument("--fma-ports", type=int, default=2)
    ap.add_argument("--gatec-flags", default="")
    args = ap.parse_args()

    ghz = args.ghz
    if not ghz:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    ghz = float(line.split(":")[1]) / 1e3
                    break
    flags = open("/proc/cpuinfo").read()
    bits = 512 if " avx512f" in flags else 256 if " avx2" in flags else 128
    peak = args.threads * ghz * (bits // 32) * 2 * args.fma_ports
    print("peak fp32: %d thread(s) x %.2f GHz x %d lanes x 2 x %d FMA ports = %.0f GFLOP/s"
          % (args.threads, ghz, bits // 32, args.fma_ports, peak))
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    tmp = tempfile.mkdtemp(prefix="gatec-gemm-")
    ov = have_openvino()
    if not ov:
        print("OpenVINO is not installed (pip install -r tools/bench/requirements.txt): its column is empty")
    print("times: min / median of --runs x --rounds (engine order reversed every other round), in ms;")
    print("ratios and GFLOP/s from the minimums;")
    print("ratio = gatec / the faster peer, ort and ov = gatec / each")
    print("IREE: min ms and gatec / IREE (not in the faster-peer ratio); n/a where "
          "IREE cannot compile the model (its error is printed)")
    print("%-11s %5s %15s %15s %15s %6s %6s %6s %8s %6s %9s %9s %9s %6s" % (
        "model", "T", "gatec", "onnxruntime", "openvino", "ratio", "ort", "ov",
        "GFLOP/s", "%peak", "max|err|", "ov|err|", "iree", "iree"))
    for name in args.models.split(","):
        onnx_path = os.path.join(tmp, name + ".onnx")
        flops_per_row = build(name, onnx_path)
        so = os.path.join(tmp, name + ".so")
        subprocess.run([os.path.join(BIN, "gatec"), onnx_path, "-o", so] +
                       args.gatec_flags.split(), check=True)
        vmfb = os.path.join(tmp, name + ".vmfb")
        iree_err = iree_compile(onnx_path, vmfb)
        if iree_err:
            print("  (IREE cannot compile %s: %s)" % (name, iree_err), flush=True)
        for t in [int(s) for s in args.seqs.split(",")]:
            x = np.random.default_rng(1).standard_normal((1, t, D), dtype=np.float32)
            xp, ref, got = (os.path.join(tmp, "%s_%d_%s.npy" % (name, t, k))
                            for k in ("x", "ref", "got"))
            np.save(xp, x)
            # Each round runs gatec, onnxruntime, OpenVINO in turn; the
            # minimum and median over the rounds are kept. This project's
            # VMs drift in speed by up to 2x over tens of seconds (the same
            # library: 72 ms, then 100-150 ms a minute later), so no
            # engine should always run in the same stretch.
            stats = {"gatec": [], "ort": [], "ov": [], "iree": []}
            ip = os.path.join(tmp, "%s_%d_iree.npy" % (name, t))
            vp = os.path.join(tmp, "%s_%d_ov.npy" % (name, t))
            for r in range(args.rounds):
                order = (["gatec", "ort", "ov", "iree"] if r % 2 == 0
                         else ["iree", "ov", "ort", "gatec"])
                for eng in order:
                    if eng == "gatec":
                        g = subprocess.run(
                            [os.path.join(BIN, "gatec-run"), so, "--input=@" + xp,
                             "--output=@" + got, "--benchmark=%d" % args.runs],
                            check=True, capture_output=True, text=True, env=env)
                        out = g.stdout + g.stderr
                    elif eng == "ort":
                        out = subprocess.run(
                            [sys.executable, "-c", ORT_CHILD, onnx_path, xp,
                             str(args.threads), str(args.runs), ref],
                            check=True, capture_output=True, text=True).stdout
                    elif eng == "ov" and ov:
                        out = subprocess.run(
                            [sys.executable, "-c", OV_CHILD, onnx_path, xp,
                             str(args.threads), str(args.runs), vp],
                            check=True, capture_output=True, text=True).stdout
                    elif eng == "iree" and not iree_err:
                        out = subprocess.run(
                            [sys.executable, "-c", IREE_CHILD, vmfb, xp,
                             str(args.threads), str(args.runs), ip],
                            check=True, capture_output=True, text=True).stdout
                    else:
                        continue
                    stats[eng].append((stat_of(out, "min"), stat_of(out, "median")))

            def summary(eng):
                if not stats[eng]:
                    return float("nan"), float("nan")
                return (min(m for m, _ in stats[eng]),
                        float(np.median([md for _, md in stats[eng]])))
            (gmin, gmed), (omin, omed), (vmin, vmed), (imin, _) = map(
                summary, ("gatec", "ort", "ov", "iree"))
            err = float(np.max(np.abs(np.load(got) - np.load(ref))))
            verr = float(np.max(np.abs(np.load(vp) - np.load(ref)))) if ov else float("nan")
            if not iree_err:
                ierr = float(np.max(np.abs(np.load(ip) - np.load(ref))))
                if not ierr <= 1e-3 * (1 + float(np.max(np.abs(np.load(ref))))):
                    print("  (IREE's output differs from onnxruntime's: %.2e)" % ierr)
            fr = flops_per_row
            if isinstance(fr, tuple):  # + causal attention: 2 GEMMs, T/2 keys
                fr = fr[0] + fr[1] * t
            gf = fr * t / (gmin * 1e-3) / 1e9
            best = min(omin, vmin) if ov else omin
            print("%-11s %5d %7.2f/%7.2f %7.2f/%7.2f %7.2f/%7.2f %6.2f %6.2f %6.2f %8.1f %5.0f%% %9.2e %9.2e %9.2f %6.2f" % (
                name, t, gmin, gmed, omin, omed, vmin, vmed, gmin / best,
                gmin / omin, gmin / vmin, gf, 100 * gf / peak, err, verr,
                imin, gmin / imin),
                flush=True)


if __name__ == "__main__":
    main()
