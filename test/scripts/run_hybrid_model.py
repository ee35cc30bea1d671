#!/usr/bin/env python3
"""Compiles test/models/hybrid_qwen3next.onnx (three Gated DeltaNet layers
with LinearAttention-27, then a G1-gated softmax attention layer) with gatec,
runs it with gatec-run at several sequence lengths (one library, dynamic
seq; 37 and 130 are not multiples of the chunk size 64) and compares both
outputs with onnxruntime: relative RMS error <= 1e-5 and
|got - ref| <= 1e-4 * (1 + |ref|) everywhere.

usage: run_hybrid_model.py --gatec PATH [--gatec-run PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(os.path.dirname(HERE), "models", "hybrid_qwen3next.onnx")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", required=True)
    ap.add_argument("--gatec-run")
    a = ap.parse_args()
    gatec_run = a.gatec_run or os.path.join(os.path.dirname(a.gatec), "gatec-run")
    work = tempfile.mkdtemp(prefix="gatec-hybrid-")
    lib = os.path.join(work, "hybrid.so")
    subprocess.run([a.gatec, MODEL, "-o", lib], check=True)
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    failures = 0
    for T in (1, 37, 64, 130):
        x = rng.standard_normal((1, T, 32)).astype(np.float32)
        px = os.path.join(work, "x.npy")
        np.save(px, x)
        py, ps = os.path.join(work, "y.npy"), os.path.join(work, "s.npy")
        subprocess.run([gatec_run, lib, "--input=x=@" + px, "--output=y=@" + py,
                        "--output=state0=@" + ps], check=True, capture_output=True)
        want = sess.run(None, {"x": x})
        for nm, got, ref in (("y", np.load(py), want[0]), ("state0", np.load(ps), want[1])):
            d = got.astype(np.float64) - ref
            rel = np.sqrt(np.mean(d ** 2)) / np.sqrt(np.mean(ref.astype(np.float64) ** 2))
            scaled = np.max(np.abs(d) / (1 + np.abs(ref)))
            ok = np.isfinite(got).all() and rel <= 1e-5 and scaled <= 1e-4
            failures += not ok
            print("%-4s seq=%-4d %-7s relative RMS %.2e  max scaled %.2e" % (
                "ok" if ok else "FAIL", T, nm, rel, scaled))
    print("hybrid Qwen3-Next layout vs onnxruntime: %d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
