#!/usr/bin/env python3
"""Runs the committed models (test/models/*.onnx) end to end on the CPU
through the linalg lowering and compares them with onnxruntime.

Each model gets random inputs (seeded by its name; every distinct symbolic
dim its own size, 2, 5, 3, ...), is run by mlir_run.run_model from the
`gated` phase (gated ops by --convert-gated-to-linalg, the rest by
--convert-onnx-to-linalg) and, with --phase both or onnx, from the `onnx`
phase (everything by --convert-onnx-to-linalg), and must agree with
onnxruntime within 1e-4 * (1 + |ref|) on every output.

usage: run_models_e2e.py [--phase gated|onnx|both] [--jobs N] [MODEL ...]
"""
import argparse
import concurrent.futures
import glob
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlir_run  # noqa: E402

TOL = 1e-4
MODELS = os.path.join(mlir_run.ROOT, "test", "models")
# (phase, model) -> why it is not run
SKIPPED = {
    ("onnx", "onnx_attention23.onnx"):
        "onnx.Attention has no linalg lowering (raised to gated.attention)",
    ("onnx", "hybrid_qwen3next.onnx"):
        "onnx.LinearAttention has no linalg lowering (raised to gated.linear_attention)",
}


def check(model, phase):
    """(max scaled error over the outputs, error message or None)."""
    name = os.path.basename(model)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    inputs = mlir_run.random_inputs(model, rng)
    want = mlir_run.reference(model, inputs)
    try:
        got = mlir_run.run_model(model, inputs, phase=phase)
    except mlir_run.RunError as e:
        errors = [x for x in str(e).splitlines() if "error" in x]
        return float("inf"), (errors or [str(e)])[0][:300]
    if len(got) != len(want):
        return float("inf"), "%d outputs, expected %d" % (len(got), len(want))
    return max(mlir_run.scaled_error(g, w) for g, w in zip(got, want)), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*")
    ap.add_argument("--phase", default="both", choices=["gated", "onnx", "both"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--gatec", default=mlir_run.TOOLS["gatec"])
    ap.add_argument("--gatec-opt", default=mlir_run.TOOLS["gatec_opt"])
    args = ap.parse_args()
    mlir_run.TOOLS.update(gatec=args.gatec, gatec_opt=args.gatec_opt)
    models = args.models or sorted(glob.glob(os.path.join(MODELS, "*.onnx")))
    phases = ["gated", "onnx"] if args.phase == "both" else [args.phase]
    runs = [(m, p) for p in phases for m in models
            if (p, os.path.basename(m)) not in SKIPPED]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda r: check(*r), runs))
    failures = 0
    for (model, phase), (err, msg) in zip(runs, results):
        ok = msg is None and err <= TOL
        failures += not ok
        print("%s %-5s %-36s max scaled error %.2e%s" % (
            "ok  " if ok else "FAIL", phase, os.path.basename(model), err,
            "  " + msg if msg else ""))
    for (phase, model), why in sorted(SKIPPED.items()):
        if phase in phases:
            print("skip %-5s %-36s %s" % (phase, model, why))
    print("models end to end on the CPU (linalg lowering): %d runs, %d failures"
          % (len(runs), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
