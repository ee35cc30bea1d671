#!/usr/bin/env python3
"""Every kernel of every committed model, compiled for the CUDA target,
passes ptxas for each architecture asked for, without spilling.

For each model in test/models and each --arch: `gatec MODEL --target=cuda
--gpu-arch=ARCH --dump-kernels=DIR --emit=none`, which writes each kernel
module's PTX and runs `ptxas -v -arch=ARCH` on it (a rejected kernel fails
the compile). Then the resource lines are read: a kernel whose spill stores
or loads exceed --max-spill-bytes fails too. The default, 32 bytes per
kernel, is what ptxas itself spills in the hybrid model's flash-attention
kernels once their score tile is in shared memory (8-16 bytes at 64-120
registers, with no local array in the PTX, whatever the register limit);
a register-blocking rewrite that asks for more registers than a thread has
spills hundreds.

The fp16 and bf16 variants of test/scripts/low_precision.py's models are
checked too (converted into the work directory; --no-low-precision skips
them).

Prints one line per model and arch (kernels, max registers, max spill
bytes, stack frame, shared memory per block, mma.sync instructions if any) and a summary; exit 1 on any failure.

usage: check_ptx.py [--gatec PATH] [--arch sm_80 --arch sm_90]
                    [--filter REGEX] [--max-spill-bytes N] [--keep DIR]
                    [--no-low-precision] [--gatec-flag FLAG]...
"""
import argparse
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "test", "models")

ENTRY = re.compile(r"^== (\S+) \((sm_\d+), ptxas exit (\d+)\)")
REGS = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")
SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                   r"(\d+) bytes spill loads")


def check(gatec, model, arch, work, max_spill, flags=()):
    name = os.path.basename(model)[:-5]
    out = os.path.join(work, "%s-%s" % (name, arch))
    c = subprocess.run([gatec, model, "--target=cuda", "--gpu-arch=" + arch,
                        "--dump-kernels=" + out, "--emit=none"] + list(flags),
                       capture_output=True, text=True)
    if c.returncode != 0:
        lines = c.stderr.strip().splitlines()
        return False, "FAIL %-28s %s: %s" % (name, arch,
                                             lines[-1] if lines else c.returncode)
    res = open(os.path.join(out, "resources.txt")).read()
    if "ptxas not found" in res:
        return False, "FAIL %-28s %s: ptxas not found (set CUDA_HOME)" % (name, arch)
    kernels = len(re.findall(r"^== ", res, re.M))
    regs = [int(r) for r in REGS.findall(res)]
    spills = [(int(f), int(s), int(l)) for f, s, l in SPILL.findall(res)]
    worst = max([max(s, l) for _, s, l in spills] or [0])
    frame = max([f for f, _, _ in spills] or [0])
    smem = max([int(b) for b in SMEM.findall(res)] or [0])
    mma = sum(open(os.path.join(out, f)).read().count("mma.sync.aligned")
              for f in os.listdir(out) if f.endswith(".ptx"))
    ok = kernels > 0 and worst <= max_spill
    return ok, ("%s %-28s %s: %3d kernels, max %3d registers, spills %d bytes, stack %d bytes, "
                "shared %d bytes%s" % ("ok  " if ok else "FAIL", name, arch, kernels,
                                       max(regs or [0]), worst, frame, smem,
                                       ", %d mma.sync" % mma if mma else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--arch", action="append")
    ap.add_argument("--filter", default=".*")
    ap.add_argument("--max-spill-bytes", type=int, default=32)
    ap.add_argument("--keep")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-low-precision", action="store_true")
    ap.add_argument("--gatec-flag", action="append", default=[],
                    help="an extra gatec flag for every compile (repeatable)")
    args = ap.parse_args()
    archs = args.arch or ["sm_80", "sm_90"]
    work = args.keep or tempfile.mkdtemp(prefix="gatec-ptx-")
    models = sorted(os.path.join(MODELS, f) for f in os.listdir(MODELS)
                    if f.endswith(".onnx") and re.search(args.filter, f))
    if not args.no_low_precision:
        import onnx
        import low_precision
        for dtype in ("f16", "bf16"):
            for name in low_precision.DEFAULT_MODELS:
                if not re.search(args.filter, name + "_" + dtype):
                    continue
                path = os.path.join(work, "%s_%s.onnx" % (name, dtype))
                onnx.save(low_precision.convert(
                    onnx.load(os.path.join(MODELS, name + ".onnx")), dtype), path)
                models.append(path)
    jobs = [(m, a) for m in models for a in archs]
    failures = 0
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(check, args.gatec, m, a, work, args.max_spill_bytes,
                               args.gatec_flag)
                   for m, a in jobs]
        for f in futures:
            ok, line = f.result()
            print(line, flush=True)
            failures += not ok
    print("ptxas: %d models x %d archs, %d failures" % (len(models), len(archs), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
