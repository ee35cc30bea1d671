#!/usr/bin/env python3
"""Benchmark: what gatec's run-time checks cost. Each model is compiled
twice, as users get it (checks on) and with --run-time-checks=false (every
check of sizes, axes and data erased; the kernels, their index clamps
included, are the same), and both libraries are timed on the same inputs,
alternating (the order reversed every round, so that neither always runs
in the same stretch of a VM that drifts in speed). It prints min and
median per build and the ratio checked / unchecked (1.00: no cost), and
checks that both builds give the same outputs.

Models:
  llama_block  the d=1024 Llama block of gemm_blocks.py (RMSNorm, GQA
               Attention-23, RoPE with position ids built in the graph,
               SwiGLU): broadcast and size checks, position-id checks
  qwen3        test/models/hf/qwen3_dynamo.onnx (a transformers export:
               token-id Gather, the in-graph mask, Range/Slice/Expand
               over run-time sizes): data checks on every token id

usage: check_cost.py [--threads 1] [--runs 20] [--rounds 4] [--seqs 128,512,2048]
                     [--models llama_block,qwen3]
Not a test: the checks' cost is read from its ratios.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(ROOT, "build", "bin")
sys.path.insert(0, HERE)
import gemm_blocks  # noqa: E402  (the d=1024 block models)


def inputs(name, t, tmp):
    """--input= arguments for `name` at sequence length t (batch 1)."""
    if name == "llama_block":
        x = np.random.default_rng(1).standard_normal((1, t, gemm_blocks.D),
                                                     dtype=np.float32)
        p = os.path.join(tmp, "x_%d.npy" % t)
        np.save(p, x)
        return ["--input=x=@" + p]
    ids = np.random.default_rng(1).integers(0, 90, (1, t), dtype=np.int64)  # < the vocabulary (96)
    mask = np.ones((1, t), np.int64)
    args = []
    for k, a in (("input_ids", ids), ("attention_mask", mask)):
        p = os.path.join(tmp, "%s_%d.npy" % (k, t))
        np.save(p, a)
        args.append("--input=%s=@%s" % (k, p))
    return args


def model(name, tmp):
    if name == "llama_block":
        path = os.path.join(tmp, "llama_block.onnx")
        gemm_blocks.build("llama_block", path)
        return path
    return os.path.join(ROOT, "test", "models", "hf", name + "_dynamo.onnx")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seqs", default="128,512,2048")
    ap.add_argument("--models", default="llama_block,qwen3")
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    tmp = tempfile.mkdtemp(prefix="gatec-checks-")
    print("threads %d; times in ms: min / median over %d rounds of %d runs"
          % (args.threads, args.rounds, args.runs))
    print("%-12s %5s %17s %17s %8s %8s %9s" % (
        "model", "T", "checked", "unchecked", "min", "median", "max|diff|"))
    for name in args.models.split(","):
        src = model(name, tmp)
        libs = {}
        for kind, flags in (("checked", []),
                            ("unchecked", ["--run-time-checks=false"])):
            libs[kind] = os.path.join(tmp, "%s_%s.so" % (name, kind))
            subprocess.run([os.path.join(BIN, "gatec"), src, "-o",
                            libs[kind]] + flags, check=True)
        for t in [int(s) for s in args.seqs.split(",")]:
            ins = inputs(name, t, tmp)
            stats = {"checked": [], "unchecked": []}
            outs = {}
            for r in range(args.rounds):
                order = ["checked", "unchecked"]
                if r % 2:
                    order.reverse()
                for kind in order:
                    o = os.path.join(tmp, "%s_%s_%d.npy" % (name, kind, t))
                    outs[kind] = o
                    g = subprocess.run(
                        [os.path.join(BIN, "gatec-run"), libs[kind]] + ins +
                        ["--output=@" + o, "--benchmark=%d" % args.runs],
                        check=True, capture_output=True, text=True, env=env)
                    stats[kind].append((gemm_blocks.stat_of(g.stdout, "min"),
                                        gemm_blocks.stat_of(g.stdout, "median")))
            (cmin, cmed), (umin, umed) = (
                (min(m for m, _ in stats[k]),
                 float(np.median([md for _, md in stats[k]])))
                for k in ("checked", "unchecked"))
            diff = float(np.max(np.abs(np.load(outs["checked"]) -
                                       np.load(outs["unchecked"]))))
            print("%-12s %5d %8.3f/%8.3f %8.3f/%8.3f %8.3f %8.3f %9.2g" % (
                name, t, cmin, cmed, umin, umed, cmin / umin, cmed / umed,
                diff), flush=True)


if __name__ == "__main__":
    main()
