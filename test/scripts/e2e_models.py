#!/usr/bin/env python3
"""End to end: each committed model compiled by gatec into a shared library,
run with gatec-run on the CPU, and compared with onnxruntime on the same
inputs: fp32 max |error| <= 1e-4 * (1 + |ref|) per element (gatec-run's
--expected-output with atol = rtol = 1e-4).

Dynamic-axis models are compiled once and run at three sequence lengths
(and two batch sizes) through the same library.

usage: e2e_models.py [--gatec PATH] [--gatec-run PATH] [--filter REGEX]
                     [--keep DIR] [--compare-unfused] [--gatec-flag FLAG]...

--gatec-flag=--cpu-thread-mapping runs the GPU's block/thread mapping of
every kernel on the CPU: the check, without a GPU, that the mapping keeps
the results.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "test", "models")

# Sizes for dynamic dims, by dim_param; one library runs all of them.
DYN_RUNS = [{"batch": 1, "seq": 3, "media_seq": 2},
            {"batch": 2, "seq": 8, "media_seq": 5},
            {"batch": 3, "seq": 17, "media_seq": 9}]

# Every symbolic dim 1 (a run-time 1 must not be taken for a broadcast, nor
# a broadcast for a full dim), run first with inputs of its own generator
# so that the other runs keep theirs.
ONES_RUN = {"batch": 1, "seq": 1, "media_seq": 1}

NP = {"tensor(float)": np.float32, "tensor(int64)": np.int64,
      "tensor(bool)": np.bool_, "tensor(int32)": np.int32}


def inputs_for(sess, sizes, rng):
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else sizes.get(d, 4) for d in i.shape]
        dt = NP[i.type]
        feeds[i.name] = (rng.standard_normal(shape).astype(dt) if dt == np.float32
                         else rng.integers(0, 2, shape).astype(dt))
    return feeds


# Every fusion switched off (gatec's ablation flags).
UNFUSED = ["--flash-attention=false", "--widen-projections=false",
           "--fuse-producers=false"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--filter", default=".*")
    ap.add_argument("--keep")
    ap.add_argument("--compare-unfused", action="store_true",
                    help="also compile with every fusion off and require the "
                         "same outputs as the fused library within 1e-5 (scaled)")
    ap.add_argument("--tol", default="1e-4",
                    help="atol = rtol of the comparison (default 1e-4; "
                         "--gpu-tf32 rounds GEMM operands to 10-bit mantissas)")
    ap.add_argument("--gatec-flag", action="append", default=[],
                    help="an extra gatec flag for every compile (repeatable)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="gatec-e2e-")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    names = sorted(f[:-5] for f in os.listdir(MODELS)
                   if f.endswith(".onnx") and re.search(args.filter, f))
    failures = runs = 0
    for name in names:
        model = os.path.join(MODELS, name + ".onnx")
        lib = os.path.join(work, name + ".so")
        c = subprocess.run([args.gatec, model, "-o", lib] + args.gatec_flag,
                           capture_output=True, text=True)
        if c.returncode != 0:
            print("FAIL %-32s compile: %s" % (name, c.stderr.strip().splitlines()[-1] if c.stderr.strip() else c.returncode))
            failures += 1
            continue
        unfused = os.path.join(work, name + "_unfused.so")
        if args.compare_unfused:
            c = subprocess.run([args.gatec, model, "-o", unfused] + UNFUSED,
                               capture_output=True, text=True)
            if c.returncode != 0:
                print("FAIL %-32s compile unfused: %s" % (name, c.stderr.strip()[-300:]))
                failures += 1
                continue
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        dynamic = any(not isinstance(d, int) for i in sess.get_inputs() for d in i.shape)
        worst_all = 0.0
        ok = True
        ones_rng = np.random.default_rng(7)
        for sizes in ([ONES_RUN] + DYN_RUNS if dynamic else DYN_RUNS[1:2]):
            feeds = inputs_for(sess, sizes, ones_rng if sizes is ONES_RUN else rng)
            refs = sess.run(None, feeds)
            cmd = [args.gatec_run, lib, "--atol=" + args.tol, "--rtol=" + args.tol]
            for i, (k, v) in enumerate(feeds.items()):
                p = os.path.join(work, "%s_in%d.npy" % (name, i))
                np.save(p, v)
                cmd.append("--input=%s=@%s" % (k, p))
            for o, r in zip(sess.get_outputs(), refs):
                p = os.path.join(work, "%s_%s_ref.npy" % (name, re.sub(r"\W", "_", o.name)))
                np.save(p, r)
                cmd.append("--expected-output=%s=@%s" % (o.name, p))
            fused_out = []
            if args.compare_unfused:
                for o in sess.get_outputs():
                    p = os.path.join(work, "%s_%s_fused.npy" % (name, re.sub(r"\W", "_", o.name)))
                    fused_out.append((o.name, p))
                    cmd.append("--output=%s=@%s" % (o.name, p))
            r = subprocess.run(cmd, capture_output=True, text=True)
            runs += 1
            if args.compare_unfused and r.returncode == 0:
                ucmd = [args.gatec_run, unfused, "--atol=1e-5", "--rtol=1e-5"]
                ucmd += [c for c in cmd[4:] if c.startswith("--input=")]
                ucmd += ["--expected-output=%s=@%s" % (n, p) for n, p in fused_out]
                u = subprocess.run(ucmd, capture_output=True, text=True)
                if u.returncode != 0:
                    ok = False
                    print("FAIL %-32s unfused differs from fused: %s" % (
                        name, (u.stdout + u.stderr).strip().splitlines()[-1]))
            m = re.findall(r"max \|error\| ([0-9.eE+-]+)", r.stdout + r.stderr)
            if m:
                worst_all = max(worst_all, max(float(x) for x in m))
            if r.returncode != 0:
                ok = False
                print("FAIL %-32s %s: %s" % (name, sizes if dynamic else "static",
                                             (r.stdout + r.stderr).strip().splitlines()[-1]))
        if ok:
            print("ok   %-32s %s max error %.2e" % (name, "%d shapes" % (len(DYN_RUNS) + 1) if dynamic else "", worst_all))
        failures += not ok
    print("e2e: %d models, %d runs, %d failures" % (len(names), runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
