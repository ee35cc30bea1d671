#!/usr/bin/env python3
"""Runs contractions through the CPU micro-kernels (--matmul-micro-kernel)
and compares them with numpy in fp64.

Every path of the kernel is taken: full and partial column panels (N a
multiple of the panel width, N below it, N above it), full row tiles and
the one-row remainder (M = 1, below, at and above the tile), K = 1,
constant weights packed at compile time (f32, f16, and a Gemm's transB
weight packed transposed) and B read at run time, batch dims broadcast on
either side, a run-time transB operand (left to the scalar loops), a
fused bias + SiLU epilogue, and GLUs whose act·mul must run in the
registers of the kernel that computes both projections (checked on the IR
after --matmul-micro-kernel), or, with a K too large for it, must not. Each model has symbolic
dims and is compiled once, then run at several sizes. The compiled IR must
contain the micro-kernel's FMAs (llvm.intr.fmuladd on vectors), so a
matcher that stops matching fails here rather than silently running the
scalar loops.

usage: run_matmul_kernels.py [--gatec PATH] [--gatec-run PATH] [--gatec-opt PATH] [--keep DIR]
                             [--flags "--cpu=x86-64-v3 ..."]
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261203)
F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def model(nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "m", inputs, outputs, initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


def vi(name, et, shape):
    return helper.make_tensor_value_info(name, et, shape)


def weight(name, shape, dtype=np.float32):
    return numpy_helper.from_array(
        (rng.standard_normal(shape) / np.sqrt(shape[-2] if len(shape) > 1 else 1)).astype(dtype), name)


def cases():
    """(name, model, runs, fused) — runs: list of input lists; the reference
    is computed from the inputs and the initializers."""
    out = []
    # x [batch, seq, K] · W [K, N], W constant: packed panels.
    for k, n in [(1, 32), (8, 40), (64, 100), (48, 7), (32, 64)]:
        w = weight("w", [k, n])
        m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                  [vi("x", F32, ["batch", "seq", k])], [vi("y", F32, ["batch", "seq", n])], [w])
        runs = [[rng.standard_normal((b, t, k)).astype(np.float32)]
                for b, t in [(1, 1), (1, 7), (2, 8), (1, 9), (3, 33), (1, 70)]]
        out.append(("const_k%d_n%d" % (k, n), m, runs, True))
    # Both operands at run time, B broadcast over A's batch dim.
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
              [vi("a", F32, ["batch", "m", "k"]), vi("b", F32, ["k", "n"])],
              [vi("y", F32, ["batch", "m", "n"])], [])
    runs = [[rng.standard_normal((bb, mm, kk)).astype(np.float32),
             rng.standard_normal((kk, nn)).astype(np.float32)]
            for bb, mm, kk, nn in [(1, 1, 1, 1), (2, 9, 5, 33), (1, 17, 16, 64), (3, 8, 3, 70)]]
    out.append(("runtime_b", m, runs, True))
    # Batched B (attention-like P·V): [b, h, m, k] · [b, 1, k, n].
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
              [vi("a", F32, ["b", 2, "m", "k"]), vi("b", F32, ["b", 1, "k", 16])],
              [vi("y", F32, ["b", 2, "m", 16])], [])
    runs = [[rng.standard_normal((bb, 2, mm, kk)).astype(np.float32),
             rng.standard_normal((bb, 1, kk, 16)).astype(np.float32)]
            for bb, mm, kk in [(1, 1, 4), (2, 11, 9)]]
    out.append(("batched_b", m, runs, True))
    # f16 weights and activations: the panels stay f16, accumulation f32.
    w = weight("w", [24, 40], np.float16)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [vi("x", F16, ["seq", 24])], [vi("y", F16, ["seq", 40])], [w])
    runs = [[rng.standard_normal((t, 24)).astype(np.float16)] for t in [1, 8, 13]]
    out.append(("const_f16", m, runs, True))
    # Gemm with a constant transB weight [N, K] (a Linear layer's weight):
    # packed transposed into the panels.
    w = weight("w", [40, 20])
    m = model([helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm", transB=1)],
              [vi("x", F32, ["m", 20])], [vi("y", F32, ["m", 40])], [w])
    runs = [[rng.standard_normal((t, 20)).astype(np.float32)] for t in [1, 10]]
    out.append(("gemm_transb_const", m, runs, True))
    # transB of a B read at run time (not contiguous along n, not packable):
    # the scalar loops.
    m = model([helper.make_node("Gemm", ["x", "b"], ["y"], name="gemm", transB=1)],
              [vi("x", F32, ["m", 20]), vi("b", F32, [12, 20])], [vi("y", F32, ["m", 12])], [])
    runs = [[rng.standard_normal((t, 20)).astype(np.float32),
             rng.standard_normal((12, 20)).astype(np.float32)] for t in [1, 10]]
    out.append(("gemm_transb_runtime", m, runs, False))
    # A projection with its bias and a sigmoid gate fused behind it.
    w, bias = weight("w", [16, 48]), weight("bias", [48])
    m = model([helper.make_node("MatMul", ["x", "w"], ["p"], name="mm"),
               helper.make_node("Add", ["p", "bias"], ["pb"], name="bias_add"),
               helper.make_node("Sigmoid", ["pb"], ["s"], name="sig"),
               helper.make_node("Mul", ["pb", "s"], ["y"], name="gate")],
              [vi("x", F32, ["batch", "seq", 16])], [vi("y", F32, ["batch", "seq", 48])],
              [w, bias])
    runs = [[rng.standard_normal((b, t, 16)).astype(np.float32)] for b, t in [(1, 1), (2, 37)]]
    out.append(("bias_silu", m, runs, True))
    # A projection and the residual add behind it (an attention's output
    # projection): with few rows, the column split narrows the add too.
    w = weight("w", [64, 64])
    m = model([helper.make_node("MatMul", ["x", "w"], ["p"], name="o_proj"),
               helper.make_node("Add", ["x", "p"], ["y"], name="residual")],
              [vi("x", F32, ["batch", "seq", 64])], [vi("y", F32, ["batch", "seq", 64])],
              [w])
    runs = [[rng.standard_normal((b, t, 64)).astype(np.float32)]
            for b, t in [(1, 1), (1, 5), (2, 3), (1, 40)]]
    out.append(("residual", m, runs, True))
    # GLUs: act(x·Wg)·(x·Wu), both projections in one kernel that stores
    # only the product (the 5th field: the act·mul is computed in the
    # kernel's registers). SwiGLU and the sigmoid GLU; F = 40 ends in a
    # partial panel.
    # With K = 2100 the two panels (2 x 2100 x 32 floats) exceed the L2
    # share: the products are stored and the act·mul stays a loop.
    # GEGLU with the exact (erf) GELU: erf is a polynomial on vectors too.
    for act, k, f, glu in [("silu", 24, 40, True), ("sigmoid", 16, 64, True),
                           ("gelu", 16, 48, True), ("silu", 2100, 32, False)]:
        wg, wu = weight("wg", [k, f]), weight("wu", [k, f])
        nodes = [helper.make_node("MatMul", ["x", "wg"], ["g"], name="gate_proj"),
                 helper.make_node("MatMul", ["x", "wu"], ["u"], name="up_proj")]
        if act == "silu":
            nodes += [helper.make_node("Sigmoid", ["g"], ["s"], name="sig"),
                      helper.make_node("Mul", ["g", "s"], ["a"], name="silu")]
        elif act == "gelu":
            nodes += [helper.make_node("Gelu", ["g"], ["a"], name="gelu")]
        else:
            nodes += [helper.make_node("Sigmoid", ["g"], ["a"], name="sig")]
        nodes.append(helper.make_node("Mul", ["a", "u"], ["y"], name="glu"))
        m = model(nodes, [vi("x", F32, ["batch", "seq", k])],
                  [vi("y", F32, ["batch", "seq", f])], [wg, wu])
        shapes = [(1, 1), (1, 7), (2, 8), (1, 9), (3, 33), (1, 70)] if k < 100 \
            else [(1, 3), (1, 9)]
        runs = [[rng.standard_normal((b, t, k)).astype(np.float32)] for b, t in shapes]
        out.append(("glu_%s_k%d_f%d" % (act, k, f), m, runs, True, glu))
    return out


def reference(m, inputs):
    """The graph in fp64 with numpy (MatMul, Gemm, Add, Sigmoid, Mul)."""
    env = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    for vi_, x in zip(m.graph.input, inputs):
        env[vi_.name] = x.astype(np.float64)
    for nd in m.graph.node:
        a = [env[i] for i in nd.input]
        if nd.op_type == "MatMul":
            r = np.matmul(a[0], a[1])
        elif nd.op_type == "Gemm":
            r = a[0] @ a[1].T
        elif nd.op_type == "Add":
            r = a[0] + a[1]
        elif nd.op_type == "Sigmoid":
            r = 1 / (1 + np.exp(-a[0]))
        elif nd.op_type == "Gelu":
            r = 0.5 * a[0] * (1 + np.vectorize(math.erf)(a[0] / math.sqrt(2)))
        elif nd.op_type == "Mul":
            r = a[0] * a[1]
        env[nd.output[0]] = r
    return env[m.graph.output[0].name]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default="gatec")
    ap.add_argument("--gatec-run", default="gatec-run")
    ap.add_argument("--gatec-opt", default="gatec-opt")
    ap.add_argument("--keep")
    ap.add_argument("--flags", default="", help="extra gatec options")
    args = ap.parse_args()
    flags = args.flags.split()
    d = args.keep or tempfile.mkdtemp(prefix="gatec-mk-")
    os.makedirs(d, exist_ok=True)
    n_cases = failures = 0
    for name, m, runs, fused, *glu in cases():
        path = os.path.join(d, name + ".onnx")
        onnx.save(m, path)
        so = os.path.join(d, name + ".so")
        ir = subprocess.run([args.gatec, path, "--compile-to=cpu"] + flags,
                            capture_output=True, text=True)
        has_fma = re.search(r"llvm.intr.fmuladd\(.*vector<", ir.stdout) is not None
        if ir.returncode != 0 or has_fma != fused:
            print("FAIL %s: micro-kernel FMAs %s, expected %s\n%s"
                  % (name, has_fma, fused, ir.stderr[-2000:]))
            failures += 1
        # The column split (a run-time chunk count from the thread count)
        # wherever a GEMM's constant weight is wider than one panel (NR =
        # 2 vectors: 32 floats with AVX-512, 16 with AVX2) and its loop
        # holds no other GEMM.
        nr = 16 if "x86-64-v3" in args.flags else 32
        weight_n = {"const_k1_n32": 32, "const_k8_n40": 40, "const_k64_n100": 100,
                    "const_k32_n64": 64, "const_k48_n7": 7, "const_f16": 40,
                    "gemm_transb_const": 40, "bias_silu": 48, "residual": 64}
        n = weight_n.get(name, int(name.split("_f")[-1]) if name.startswith("glu_") else 0)
        split = "call @omp_get_max_threads" in ir.stdout
        want_split = n > nr
        if ir.returncode == 0 and split != want_split:
            print("FAIL %s: column split %s, expected %s" % (name, split, want_split))
            failures += 1
        if glu:
            # After the micro-kernels: the act·mul in the kernel (no
            # elementwise generic left, the activation on vectors).
            tiled = os.path.join(d, name + ".tiled.mlir")
            subprocess.run([args.gatec, path, "--compile-to=tiled", "-o", tiled] + flags,
                           check=True)
            after = subprocess.run([args.gatec_opt, tiled, "--matmul-micro-kernel"],
                                   capture_output=True, text=True, check=True).stdout
            in_kernel = ("linalg.generic" not in after and
                         re.search(r"math\.(exp|tanh|erf) .*: vector<", after) is not None)
            if in_kernel != glu[0]:
                print("FAIL %s: act·mul in the GLU kernel %s, expected %s"
                      % (name, in_kernel, glu[0]))
                failures += 1
        subprocess.run([args.gatec, path, "-o", so] + flags, check=True)
        for i, inputs in enumerate(runs):
            n_cases += 1
            ref = reference(m, inputs)
            files = []
            for j, x in enumerate(inputs):
                files.append(os.path.join(d, "%s_%d_in%d.npy" % (name, i, j)))
                np.save(files[-1], x)
            got_path = os.path.join(d, "%s_%d_out.npy" % (name, i))
            # 1, 3 and 5 threads in turn: with few row blocks the column
            # split gives each thread a chunk of the panels (3 and 5 leave
            # a last chunk narrower than the others, or chunks of one
            # panel).
            threads = [1, 3, 5][i % 3]
            r = subprocess.run([args.gatec_run, so] + ["--input=@" + f for f in files] +
                               ["--output=@" + got_path], capture_output=True, text=True,
                               env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
            if r.returncode != 0:
                print("FAIL %s run %d: %s" % (name, i, r.stderr[-1000:]))
                failures += 1
                continue
            got = np.load(got_path).astype(np.float64)
            tol = 2e-3 if got_path and inputs[0].dtype == np.float16 else 1e-5
            err = np.abs(got - ref) / (1 + np.abs(ref))
            if got.shape != ref.shape or err.max(initial=0) > tol:
                print("FAIL %s run %d: shape %s vs %s, max scaled error %g"
                      % (name, i, got.shape, ref.shape, err.max(initial=0)))
                failures += 1
            else:
                print("ok %s %s, %d thread(s): max scaled error %.2e"
                      % (name, "x".join(map(str, inputs[0].shape)), threads,
                         err.max(initial=0)))
    print("matmul micro-kernels%s: %d cases, %d failures"
          % (" (" + args.flags + ")" if flags else "", n_cases, failures))
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
