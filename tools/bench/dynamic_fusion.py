#!/usr/bin/env python3
"""Benchmark: fusion under dynamic shapes at a realistic width.

Two blocks with symbolic batch and seq, random weights, written with
onnx.helper as exporters write them:
- swiglu: a SwiGLU FFN (d 1024, hidden 2816: MatMul W, MatMul V, Sigmoid,
  Mul, Mul, MatMul down);
- gated_attention: a G1-gated causal attention layer in the Qwen3-Next
  layout (d 1024, 16 heads of 64: q/k/v/gate projections, head reshapes
  and transposes, scores scaled by 1/sqrt(64), the causal mask built at
  run time as torch's SDPA math path exports it (Trilu of ones(T, S)),
  softmax, P·V, sigmoid(x Wg) ⊙ y, output projection).
Each is compiled by gatec twice, with every fusion on (the default) and off (--flash-attention=false
--widen-projections=false --fuse-producers=false), and run by gatec-run
--benchmark at several sequence lengths and thread counts next to
onnxruntime on the same model. Outputs are checked against onnxruntime
first (1e-3 scaled). Prints medians in ms, GFLOP/s, and the ratios
fused/unfused and fused/onnxruntime (< 1: fused is faster). Not a test.

usage: dynamic_fusion.py [--block swiglu|gated_attention|all] [--seqs 128,512]
                         [--threads 1,2] [--runs 12] [--d 1024] [--hidden 2816]
                         [--heads 16]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as oh

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "build", "bin")


def swiglu(d, hidden, seed=0):
    rng = np.random.default_rng(seed)
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(w(d, hidden), "W"),
             onnx.numpy_helper.from_array(w(d, hidden), "V"),
             onnx.numpy_helper.from_array(w(hidden, d), "D")]
    nodes = [oh.make_node("MatMul", ["x", "W"], ["g"]),
             oh.make_node("MatMul", ["x", "V"], ["u"]),
             oh.make_node("Sigmoid", ["g"], ["s"]),
             oh.make_node("Mul", ["g", "s"], ["a"]),
             oh.make_node("Mul", ["a", "u"], ["h"]),
             oh.make_node("MatMul", ["h", "D"], ["y"])]
    g = oh.make_graph(nodes, "swiglu",
                      [oh.make_tensor_value_info("x", TP.FLOAT, ["batch", "seq", d])],
                      [oh.make_tensor_value_info("y", TP.FLOAT, ["batch", "seq", d])],
                      inits)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])


def gated_attention(d, heads, seed=0):
    rng = np.random.default_rng(seed)
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
    dh = d // heads
    c = lambda name, v, dt=np.int64: onnx.numpy_helper.from_array(np.array(v, dtype=dt), name)
    inits = [onnx.numpy_helper.from_array(w(d, d), n) for n in ("Wq", "Wk", "Wv", "Wg", "Wo")]
    inits += [c("heads_shape", [0, 0, heads, dh]), c("model_shape", [0, 0, d]),
              c("scale", 1.0 / np.sqrt(dh), np.float32), c("one", [1.0], np.float32),
              c("zero", [0.0], np.float32), c("ninf", [-np.inf], np.float32),
              c("m2", [-2]), c("m1", [-1])]
    n = oh.make_node
    nodes = []
    for p in ("q", "k", "v"):
        nodes += [n("MatMul", ["x", "W" + p], [p + "p"]),
                  n("Reshape", [p + "p", "heads_shape"], [p + "r"]),
                  n("Transpose", [p + "r"], [p + "h"], perm=[0, 2, 1, 3])]
    nodes += [n("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
              n("MatMul", ["qh", "kt"], ["s0"]),
              n("Mul", ["s0", "scale"], ["s1"]),
              # The causal mask as torch's SDPA math path exports it.
              n("Shape", ["qh"], ["qs"]), n("Shape", ["kh"], ["ks"]),
              n("Slice", ["qs", "m2", "m1"], ["tq"]), n("Slice", ["ks", "m2", "m1"], ["tk"]),
              n("Concat", ["tq", "tk"], ["ts"], axis=0),
              n("Expand", ["one", "ts"], ["ones"]),
              n("Trilu", ["ones"], ["band"], upper=0),
              n("Equal", ["band", "zero"], ["out"]),
              n("Where", ["out", "ninf", "zero"], ["mask"]),
              n("Add", ["s1", "mask"], ["s2"]),
              n("Softmax", ["s2"], ["p"], axis=-1),
              n("MatMul", ["p", "vh"], ["o"]),
              n("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              n("Reshape", ["ot", "model_shape"], ["om"]),
              n("MatMul", ["x", "Wg"], ["gp"]),
              n("Sigmoid", ["gp"], ["gs"]),
              n("Mul", ["om", "gs"], ["og"]),
              n("MatMul", ["og", "Wo"], ["y"])]
    g = oh.make_graph(nodes, "gated_attention",
                      [oh.make_tensor_value_info("x", TP.FLOAT, ["batch", "seq", d])],
                      [oh.make_tensor_value_info("y", TP.FLOAT, ["batch", "seq", d])],
                      inits)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])


def gatec_run(lib, x_path, ref_path, runs, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run([os.path.join(BIN, "gatec-run"), lib, "--input=x=@" + x_path,
                        "--expected-output=y=@" + ref_path, "--atol=1e-3", "--rtol=1e-3",
                        "--benchmark=%d" % runs], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("gatec-run failed: " + (r.stdout + r.stderr)[-500:])
    m = re.search(r"median ([0-9.]+) ms", r.stdout + r.stderr)
    if not m:
        sys.exit("no median in gatec-run's output: " + (r.stdout + r.stderr)[-500:])
    return float(m.group(1))


def ort_median(path, x, runs, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    sess.run(None, {"x": x})
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, {"x": x})
        ts.append((time.perf_counter() - t) * 1e3)
    return float(np.median(ts))


def bench(block, model, flops, args, work):
    path = os.path.join(work, block + ".onnx")
    onnx.save(model, path)
    libs = {}
    for name, flags in [("fused", []), ("unfused", ["--flash-attention=false",
                                                    "--widen-projections=false",
                                                    "--fuse-producers=false"])]:
        lib = os.path.join(work, block + "-" + name + ".so")
        t = time.perf_counter()
        subprocess.run([os.path.join(BIN, "gatec"), path, "-o", lib] + flags, check=True)
        print("compiled %s %-8s in %.1f s" % (block, name, time.perf_counter() - t), flush=True)
        libs[name] = lib
    rng = np.random.default_rng(1)
    print("%s d=%d, batch 1, dynamic seq; medians of %d (ms)" % (block, args.d, args.runs))
    print("%5s %3s %9s %9s %9s %8s %8s %7s %7s" % ("T", "thr", "fused", "unfused", "ort",
                                                "GFLOP/s", "ortGF/s", "f/unf", "f/ort"))
    for seq in [int(s) for s in args.seqs.split(",")]:
        x = rng.standard_normal((1, seq, args.d)).astype(np.float32)
        xp = os.path.join(work, "%s-x%d.npy" % (block, seq))
        rp = os.path.join(work, "%s-y%d.npy" % (block, seq))
        np.save(xp, x)
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.save(rp, ref)
        flop = flops(seq)
        for thr in [int(t) for t in args.threads.split(",")]:
            f = gatec_run(libs["fused"], xp, rp, args.runs, thr)
            u = gatec_run(libs["unfused"], xp, rp, args.runs, thr)
            o = ort_median(path, x, args.runs, thr)
            print("%5d %3d %9.2f %9.2f %9.2f %8.1f %8.1f %7.2f %7.2f" % (
                seq, thr, f, u, o, flop / f / 1e6, flop / o / 1e6, f / u, f / o), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--block", default="all", choices=["swiglu", "gated_attention", "all"])
    ap.add_argument("--seqs", default="128,512")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=2816)
    ap.add_argument("--heads", type=int, default=16)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gatec-dynfuse-")
    if args.block in ("swiglu", "all"):
        bench("swiglu", swiglu(args.d, args.hidden),
              lambda t: 2.0 * t * args.d * args.hidden * 3, args, work)
    if args.block in ("gated_attention", "all"):
        # Five d x d projections and Q·Kᵀ, P·V over the causal half.
        bench("gated_attention", gated_attention(args.d, args.heads),
              lambda t: 2.0 * t * args.d * args.d * 5 + 2.0 * t * t * args.d, args, work)


if __name__ == "__main__":
    main()
