#!/usr/bin/env python3
"""Benchmark: gatec's compiled library vs onnxruntime (CPU) and PyTorch eager
on the same models and inputs, several sequence lengths, same thread count.

Each measurement runs in its own process (so its peak RSS is its own):
  gatec        gatec-run MODEL.so --benchmark=N (median of N after warm-up)
  unfused      the same, compiled with every fusion off (--flash-attention=
               false --widen-projections=false --fuse-producers=false)
  onnxruntime  InferenceSession(CPUExecutionProvider, intra_op_num_threads=T)
  torch        the PyTorch module the model was exported from (same seed,
               so the same weights; test/models/export_models.py), eager,
               torch.inference_mode, torch.set_num_threads(T); only where a
               Python with torch is given (--torch-python).
It prints the medians, the ratio gatec/peer (< 1: gatec is faster) and each
process's peak RSS. Not a test: speed goals are read from its ratios.

usage: cpu_vs_peers.py [--threads T] [--runs N] [--seqs 16,128,512]
                       [--models a,b] [--torch-python PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "test", "models")
# Dynamic-axis exports: one library serves every sequence length.
DEFAULT_MODELS = ["llama_block_dyn", "qwen3next_gated_attn_dyn",
                  "gated_attn_elementwise_dyn", "glu_swiglu_dyn",
                  "gtrxl_output_dyn"]
TORCH_NAMES = {"llama_block_dyn": "llama_block",
               "qwen3next_gated_attn_dyn": "qwen3next_gated_attn",
               "gated_attn_elementwise_dyn": "gated_attn_elementwise"}

ORT_CHILD = r"""
import sys, time, numpy as np, onnxruntime as ort
model, x, threads, runs = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
feed = {s.get_inputs()[0].name: x}
for _ in range(3): s.run(None, feed)
t = []
for _ in range(runs):
    a = time.perf_counter(); s.run(None, feed); t.append(time.perf_counter() - a)
print("median_ms", 1e3 * float(np.median(t)))
"""

TORCH_CHILD = r"""
import sys, time, numpy as np, torch
sys.path.insert(0, sys.argv[5])
import export_models as em
name, x, threads, runs = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
m, _ = em.build(name)
xt = torch.from_numpy(x)
with torch.inference_mode():
    for _ in range(3): m(xt)
    t = []
    for _ in range(runs):
        a = time.perf_counter(); m(xt); t.append(time.perf_counter() - a)
print("median_ms", 1e3 * float(np.median(t)))
"""


def timed(cmd, env=None):
    """Runs cmd under /usr/bin/time-like accounting: (stdout, peak MiB)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    out, err = p.stdout.read(), p.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), err[-2000:]))
    return out, usage.ru_maxrss / 1024.0


def median_of(out, key):
    for line in out.splitlines():
        if line.startswith(key):
            return float(line.split()[1])
        if "median" in line and key == "gatec":
            # gatec-run: "benchmark: N runs ...: min a ms, median b ms, max c ms"
            return float(line.split("median")[1].split()[0])
    raise RuntimeError("no timing in:\n" + out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seqs", default="16,128,512")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--torch-python", help="a Python with torch, for the PyTorch eager column")
    args = ap.parse_args()
    seqs = [int(s) for s in args.seqs.split(",")]
    tmp = tempfile.mkdtemp(prefix="gatec-bench-")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("threads %d, batch %d, %d timed runs each (median), CPU: %s"
          % (args.threads, args.batch, args.runs, os.uname().machine))
    hdr = "%-28s %5s  %9s %9s %7s  %9s %7s  %9s %7s  %s" % (
        "model", "seq", "gatec ms", "unfused", "g/unf", "ort ms", "g/ort",
        "torch ms", "g/torch", "peak MiB gatec/ort/torch")
    print(hdr)
    print("-" * len(hdr))
    ratios, fusion_ratios = [], []
    for name in args.models.split(","):
        onnx_path = os.path.join(MODELS, name + ".onnx")
        lib = os.path.join(tmp, name + ".so")
        subprocess.run([args.gatec, onnx_path, "-o", lib], check=True)
        unfused_lib = os.path.join(tmp, name + "_unfused.so")
        subprocess.run([args.gatec, onnx_path, "-o", unfused_lib,
                        "--flash-attention=false", "--widen-projections=false",
                        "--fuse-producers=false"], check=True)
        import onnx
        m = onnx.load(onnx_path, load_external_data=False)
        d = m.graph.input[0].type.tensor_type.shape.dim[-1].dim_value
        for seq in seqs:
            x = np.random.default_rng(seq).standard_normal(
                (args.batch, seq, d)).astype(np.float32)
            xp = os.path.join(tmp, "x_%s_%d.npy" % (name, seq))
            np.save(xp, x)
            out, g_mem = timed([args.gatec_run, lib, "--input=@" + xp,
                                "--benchmark=%d" % args.runs], env)
            g = median_of(out, "gatec")
            out, _ = timed([args.gatec_run, unfused_lib, "--input=@" + xp,
                            "--benchmark=%d" % args.runs], env)
            u = median_of(out, "gatec")
            fusion_ratios.append(g / u)
            out, o_mem = timed([sys.executable, "-c", ORT_CHILD, onnx_path, xp,
                                str(args.threads), str(args.runs)])
            o = median_of(out, "median_ms")
            t, t_mem = None, None
            if args.torch_python and name in TORCH_NAMES:
                out, t_mem = timed([args.torch_python, "-c", TORCH_CHILD,
                                    TORCH_NAMES[name], xp, str(args.threads),
                                    str(args.runs), MODELS])
                t = median_of(out, "median_ms")
            ratios.append(g / o)
            print("%-28s %5d  %9.3f %9.3f %7.2f  %9.3f %7.2f  %9s %7s  %.0f/%.0f/%s" % (
                name, seq, g, u, g / u, o, g / o, "%.3f" % t if t else "-",
                "%.2f" % (g / t) if t else "-", g_mem, o_mem,
                "%.0f" % t_mem if t_mem else "-"))
    print("geometric mean gatec/onnxruntime: %.2f, fused/unfused: %.2f (< 1: faster)"
          % (float(np.exp(np.mean(np.log(ratios)))),
             float(np.exp(np.mean(np.log(fusion_ratios))))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
