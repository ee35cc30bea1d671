#!/usr/bin/env python3
"""Benchmark: Gated DeltaNet's gated RMSNorm fused into the linear
attention's epilogue (--fuse-linear-attention-epilogue) against the same
model with the norm as a kernel of its own (--fuse-norm-epilogue=false) and
against onnxruntime, in one run on the CPU.

The model is LinearAttention-27 (gated_delta, per-head decay, β per head)
followed by the gated RMSNorm over each head's row of Dv as Qwen3-Next
writes it (Reshape to rows, RMSNormalization-23, times z·sigmoid(z)),
symbolic T (test/scripts/run_linear_attention.py's make_model with norm).
For each T: min (or median) latency of --runs runs (gatec-run --benchmark
after a warm-up; onnxruntime in this process), outputs compared.
Not part of the tests.

usage: tools/bench/la_norm_epilogue.py [--heads 16] [--dim 128]
          [--lengths 512,2048,8192] [--runs 10] [--threads 1]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "scripts"))
import run_linear_attention as rla  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--lengths", default="512,2048,8192")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--stat", choices=("min", "median"), default="min")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    gatec = os.path.join(a.build, "bin", "gatec")
    gatec_run = os.path.join(a.build, "bin", "gatec-run")
    H, D = a.heads, a.dim
    work = tempfile.mkdtemp(prefix="gatec-bench-lanorm-")
    model = os.path.join(work, "m.onnx")
    names = rla.make_model(model, "gated_delta", 1, H, H, D, D, "head", "heads", False,
                           None, True)
    libs = {"fused": os.path.join(work, "fused.so"), "unfused": os.path.join(work, "unfused.so")}
    subprocess.run([gatec, model, "-o", libs["fused"]], check=True)
    subprocess.run([gatec, model, "--fuse-norm-epilogue=false", "-o", libs["unfused"]],
                   check=True)
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    rng = np.random.default_rng(0)
    print("Gated DeltaNet + gated RMSNorm, H=%d, Dk=Dv=%d, B=1, %d thread(s), %s of %d "
          "runs; onnxruntime %s" % (H, D, a.threads, a.stat, a.runs, ort.__version__))
    print("%6s | %10s | %12s | %10s | %s" % ("T", "fused ms", "unfused ms", "ort ms",
                                            "fused/unfused  fused/ort  max |fused-ort|"))
    for T in [int(t) for t in a.lengths.split(",")]:
        x = rla.make_inputs(rng, names, "gated_delta", 1, T, H, H, D, D, "head", "heads",
                            False)
        args = []
        for n in names:
            p = os.path.join(work, "%s.npy" % n)
            np.save(p, x[n])
            args.append("--input=%s=@%s" % (n, p))
        res = {}
        for form, lib in libs.items():
            po = os.path.join(work, "o_%s.npy" % form)
            out = subprocess.run([gatec_run, lib] + args + [
                "--output=output=@" + po, "--benchmark=%d" % a.runs, "--warmup=1"],
                capture_output=True, text=True, env=env, check=True).stdout
            res[form] = float(re.search(r"%s ([0-9.]+) ms" % a.stat, out).group(1))
            res[form + "_out"] = np.load(po)
        feeds = {n: x[n] for n in names}
        sess.run(None, feeds)
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            o = sess.run(["output"], feeds)[0]
            times.append((time.perf_counter() - t0) * 1e3)
        t_ort = float(np.min(times) if a.stat == "min" else np.median(times))
        err = float(np.max(np.abs(res["fused_out"] - o)))
        print("%6d | %10.2f | %12.2f | %10.2f | %.2f  %.2f  %.1e" % (
            T, res["fused"], res["unfused"], t_ort, res["fused"] / res["unfused"],
            res["fused"] / t_ort, err))


if __name__ == "__main__":
    main()
