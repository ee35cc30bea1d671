#!/usr/bin/env python3
"""Static check of the CUDA kernels of realistic-size layers, without a GPU.

Compiles d=1024 layers with a symbolic sequence length for the CUDA target
(gatec --target=cuda --gpu-arch=ARCH) and reads, per kernel:
  - from its PTX (--dump-kernels): tensor-core instructions (mma.sync,
    wgmma), fp32 FMAs and separate mul/add, global loads (all; 128-bit),
    global stores, shared loads, barriers, warp shuffles, cp.async, ex2;
  - from ptxas -v: registers, shared memory, spill bytes;
  - from the host IR (--compile-to=gpu): its grid (one block or sized at
    run time) and whether a loop of its work runs on one thread of the block
    (a thread-0-only region holding an scf.for: a product or a sweep
    serialised);
  - an occupancy ESTIMATE on an H100/H200 SM (65536 registers, 228 KiB of
    shared memory, 2048 threads, 32 blocks): resident threads / 2048.
Layers (tools/bench/gemm_blocks.py and linear_attention.py builders): the
SwiGLU FFN (d 1024, hidden 2816), the G1-gated GQA attention layer (16 heads,
4 KV heads, head dim 64), the Gated DeltaNet recurrence (LinearAttention-27
gated_delta, 16 heads of 128) in fp32, and the FFN and attention layer in
bf16 (test/scripts/low_precision.py's conversion) with --gpu-mma.

Fails (exit 1) on what the target promises today: a spill over
--max-spill-bytes, a one-block kernel whose buffers are sized at run time,
a kernel with a loop on one thread, fp32 multiplies and adds left
uncontracted (more mul/add.rn.f32 than fma.rn.f32, --fp-contract; checked
from sm_90 on, where gatec contracts them). Tensor-core use is reported, not
required (fp32 GEMMs run on the FMA units; --gpu-mma covers bf16/fp16).

usage: gpu_kernel_report.py [--gatec PATH] [--arch sm_90] [--work DIR]
                            [--max-spill-bytes N] [--only NAME]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "scripts"))

import onnx  # noqa: E402

import gemm_blocks  # noqa: E402
import linear_attention  # noqa: E402

PTX_COUNTS = [
    ("mma", r"\bmma\.sync\.|\bwgmma\."),
    ("fma32", r"\bfma\.rn\.f32\b"),
    ("mul+add32", r"\b(?:mul|add|sub)\.rn\.f32\b"),
    ("ld.global", r"\bld\.global\."),
    ("ld.g.128", r"\bld\.global\.(?:nc\.)?v4\.(?:f32|b32|u32)|\bld\.global\.(?:nc\.)?v2\.(?:f64|b64|u64)"),
    ("st.global", r"\bst\.global\."),
    ("ld.shared", r"\bld\.shared\."),
    ("bar", r"\bbar\.sync\b|\bbarrier\.sync\b"),
    ("shfl", r"\bshfl\.sync\b"),
    ("cp.async", r"\bcp\.async\b"),
    ("ex2", r"\bex2\.approx"),
]
ENTRY = re.compile(r"^== (\S+) \((sm_\d+), ptxas exit (\d+)\)")
REGS = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")
SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
THREADS = 128


def layers(work):
    """(name, onnx path, extra gatec flags) of the layers checked."""
    out = []
    for name, block in (("swiglu_ffn", "swiglu_ffn"), ("gated_attn", "gated_attn")):
        p = os.path.join(work, name + ".onnx")
        gemm_blocks.build(block, p)
        out.append((name, p, []))
    p = os.path.join(work, "gated_delta.onnx")
    linear_attention.la_model(p, 16, 128, rule="gated_delta")
    out.append(("gated_delta", p, []))
    import low_precision
    for name in ("swiglu_ffn", "gated_attn"):
        src = os.path.join(work, name + ".onnx")
        dst = os.path.join(work, name + "_bf16.onnx")
        onnx.save(low_precision.convert(onnx.load(src), "bf16"), dst)
        out.append((name + "_bf16", dst, ["--gpu-mma"]))
    return out


def region(text, start):
    """The text from `start` (just after an opening brace) to its match."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return text[start:]


def kernel_modules(gpu_ir):
    """Per gpu.module of the host IR: (grid is one static block, buffers
    sized at run time, loop on one thread)."""
    info = {}
    for m in re.finditer(r"gpu\.launch_func\s+@(\w+)::@\w+ blocks in \(([^)]*)\)[^\n]*", gpu_ir):
        grid = m.group(2).replace(" ", "")
        dynamic = "?" in m.group(0)
        info.setdefault(m.group(1), [False, False, False])
        if grid == "%c1,%c1,%c1":
            info[m.group(1)][0] = True
        info[m.group(1)][1] |= dynamic
    for m in re.finditer(r"\n  gpu\.module @(\w+) (.*?)\n  }\n", gpu_ir, re.S):
        body = m.group(2)
        one = False
        for r in re.finditer(r"(%\w+) = arith\.cmpi ult, %thread_id_x, %c1 : index", body):
            for blk in re.finditer(r"scf\.if " + re.escape(r.group(1)) + r" \{", body):
                if "scf.for" in region(body, blk.end()):
                    one = True
        info.setdefault(m.group(1), [False, False, False])[2] = one
    return info


def occupancy(regs, smem):
    by_regs = 65536 // max(1, regs * THREADS) if regs else 32
    by_smem = (228 * 1024) // smem if smem else 32
    blocks = min(by_regs, by_smem, 32, 2048 // THREADS)
    return blocks * THREADS / 2048.0


def report(gatec, name, path, flags, arch, work, max_spill):
    kdir = os.path.join(work, "k_" + name)
    base = [gatec, path, "--target=cuda", "--gpu-arch=" + arch] + flags
    c = subprocess.run(base + ["--dump-kernels=" + kdir, "--emit=none"],
                       capture_output=True, text=True)
    if c.returncode:
        print("FAIL %s: %s" % (name, c.stderr.strip().splitlines()[-1:]))
        return 1
    g = subprocess.run(base + ["--compile-to=gpu"], capture_output=True, text=True)
    mods = kernel_modules(g.stdout)
    # gatec contracts fp32 multiply-adds from sm_90 on (see CudaTarget.cpp).
    contract = int(re.sub(r"\D", "", arch) or 0) >= 90
    res = open(os.path.join(kdir, "resources.txt")).read()
    sections = re.split(r"(?m)^(?=== )", res)
    failures = 0
    print("\n%s (%s%s): %d kernels" % (name, arch, " " + " ".join(flags) if flags else "",
                                         len(mods)))
    cols = [c for c, _ in PTX_COUNTS]
    print("  %-24s %5s %6s %5s %s  %-8s %s" % (
        "kernel", "regs", "smem", "occ~", " ".join("%9s" % c for c in cols), "grid", "checks"))
    for sec in sections:
        e = ENTRY.match(sec)
        if not e:
            continue
        kname = e.group(1)
        ptx_path = os.path.join(kdir, kname + ".ptx")
        ptx = open(ptx_path).read() if os.path.exists(ptx_path) else ""
        counts = [len(re.findall(rx, ptx)) for _, rx in PTX_COUNTS]
        regs = max([int(r) for r in REGS.findall(sec)] or [0])
        smem = max([int(s) for s in SMEM.findall(sec)] or [0])
        spill = max([int(a) + int(b) for a, b in SPILL.findall(sec)] or [0])
        one_block, dyn, one_thread = mods.get(kname, [False, False, False])
        bad = []
        if spill > max_spill:
            bad.append("spills %d B" % spill)
        if one_block and dyn:
            bad.append("one block over run-time-sized data")
        if one_thread:
            bad.append("a loop on one thread")
        fma, muladd = counts[1], counts[2]
        if contract and muladd > max(fma, 8):
            bad.append("fp32 multiply-adds not contracted (%d mul/add.rn vs %d fma)"
                       % (muladd, fma))
        failures += len(bad)
        print("  %-24s %5d %6d %4.0f%% %s  %-8s %s" % (
            kname[-24:], regs, smem, 100 * occupancy(regs, smem),
            " ".join("%9d" % n for n in counts),
            "1 block" if one_block else "sized",
            ("FAIL: " + "; ".join(bad)) if bad else "ok"))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--work")
    ap.add_argument("--max-spill-bytes", type=int, default=32)
    ap.add_argument("--only")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="gatec-kreport-")
    os.makedirs(work, exist_ok=True)
    print("Static kernel report (no GPU run; occupancy is an ESTIMATE for an "
          "H100/H200 SM at %d threads per block)" % THREADS)
    failures = 0
    for name, path, flags in layers(work):
        if a.only and a.only != name:
            continue
        failures += report(a.gatec, name, path, flags, a.arch, work, a.max_spill_bytes)
    print("\ngpu kernel report: %d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
