#!/usr/bin/env python3
"""Runs every gated op on the CPU through its linalg lowering and compares
the results with the numpy reference semantics (test/reference/
gated_reference.py, written from the op descriptions).

Each case becomes one function of a single MLIR module: the inputs as
constants (random, seeded), the gated op, and printMemrefF32 of the result.
The module is lowered with `gatec-opt --convert-gated-to-linalg` and
MLIR's upstream pipeline, and executed with mlir-runner.

usage: run_gated_ops.py [--gatec-opt PATH] [--mlir-runner PATH] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import gated_reference as ref  # noqa: E402

LLVM = "/usr/lib/llvm-22"
PIPELINE = [
    "--convert-gated-to-linalg",
    "--one-shot-bufferize=bufferize-function-boundaries",
    "--scf-forall-to-for",  # gated.router's loop over the tokens
    "--convert-linalg-to-loops", "--expand-strided-metadata", "--lower-affine",
    "--convert-scf-to-cf", "--convert-math-to-llvm", "--convert-math-to-libm",
    "--convert-to-llvm",
    "--reconcile-unrealized-casts",
]
TOL = 1e-5  # |got - ref| <= TOL * (1 + |ref|), fp32 against fp64
rng = np.random.default_rng(20261130)


def ttype(a):
    if a.dtype == np.bool_:
        e = "i1"
    else:
        e = "f32"
    return "tensor<%sx%s>" % ("x".join(str(d) for d in a.shape), e) if a.ndim else "tensor<%s>" % e


def literal(a):
    if a.dtype == np.bool_:
        flat = ["true" if x else "false" for x in a.reshape(-1)]
    else:
        flat = ["%.9e" % float(x) for x in a.astype(np.float32).reshape(-1)]
    def nest(vals, shape):
        if not shape:
            return vals[0]
        n = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return "[" + ", ".join(nest(vals[i * n:(i + 1) * n], shape[1:]) for i in range(shape[0])) + "]"
    return "dense<%s>" % nest(flat, list(a.shape))


cases = []  # (name, mlir op text builder, inputs, expected)


def case(name, inputs, op, expected, result_shape):
    cases.append((name, inputs, op, [(np.asarray(expected, np.float64), result_shape, "f32")]))


def case_outs(name, inputs, op, outs):
    """An op of several results: outs is [(expected, shape, "f32" | "i64")]."""
    cases.append((name, inputs, op, [(np.asarray(e, np.float64), s, t) for e, s, t in outs]))


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# gated.attention
B, Hq, Hkv, T, D = 2, 4, 2, 5, 8
q, k, v = f32(B, Hq, T, D), f32(B, Hkv, T, D), f32(B, Hkv, T, D)
g = f32(B, Hq, T, D)
gh = f32(B, Hq, T, 1)
A = "gated.attention %a0, %a1, %a2"
sig = "tensor<%dx%dx%dx%dxf32>, tensor<%dx%dx%dx%dxf32>, tensor<%dx%dx%dx%dxf32> -> tensor<%dx%dx%dx%dxf32>" % (
    B, Hq, T, D, B, Hkv, T, D, B, Hkv, T, D, B, Hq, T, D)
case("attention_causal_gqa_g1", [q, k, v, g],
     A + " gate(%%a3 : %s, sigmoid, elementwise, multiply) {causal, scale = 0.35355339 : f32} : %s" % (ttype(g), sig),
     ref.attention(q, k, v, 0.35355339, causal=True, gate=g), (B, Hq, T, D))
case("attention_headwise_ns_add", [q, k, v, gh],
     A + " gate(%%a3 : %s, ns_sigmoid, headwise, add) {scale = 0.5 : f32} : %s" % (ttype(gh), sig),
     ref.attention(q, k, v, 0.5, gate=gh, gate_activation="ns_sigmoid", gate_mode="add"), (B, Hq, T, D))
mask = rng.random((T, T)) > 0.4
mask[2, :] = False  # a fully masked row gives zeros
case("attention_bool_mask_masked_row", [q, k, v, mask],
     A + " mask(%%a3 : %s) {scale = 0.25 : f32} : %s" % (ttype(mask), sig),
     ref.attention(q, k, v, 0.25, mask=mask), (B, Hq, T, D))
addm = f32(1, 1, T, T)
case("attention_additive_mask_silu", [q, k, v, addm, g],
     A + " mask(%%a3 : %s) gate(%%a4 : %s, silu, elementwise, multiply) {causal, scale = 0.25 : f32} : %s" % (
         ttype(addm), ttype(g), sig),
     ref.attention(q, k, v, 0.25, causal=True, mask=addm, gate=g, gate_activation="silu"), (B, Hq, T, D))
S, Dv = 7, 6
kc, vc = f32(B, Hkv, S, D), f32(B, Hkv, S, Dv)
case("attention_cross", [q, kc, vc],
     A + " {scale = 0.35355339 : f32} : %s, %s, %s -> tensor<%dx%dx%dx%dxf32>" % (
         ttype(q), ttype(kc), ttype(vc), B, Hq, T, Dv),
     ref.attention(q, kc, vc, 0.35355339), (B, Hq, T, Dv))
# Longer rows (several query and key blocks in the flash form), MQA, a
# causal mask with a boolean mask and a fully masked row; causal
# cross-attention with more keys than queries (top-left aligned).
T2 = 37
q2, k2, v2, g2 = f32(1, 4, T2, D), f32(1, 1, T2, D), f32(1, 1, T2, D), f32(1, 4, T2, D)
mask2 = rng.random((1, 1, T2, T2)) > 0.3
mask2[0, 0, 20, :] = False
case("attention_long_mqa_causal_mask", [q2, k2, v2, mask2, g2],
     "gated.attention %%a0, %%a1, %%a2 mask(%%a3 : %s) gate(%%a4 : %s, sigmoid, elementwise, multiply) "
     "{causal, scale = 0.35355339 : f32} : %s, %s, %s -> %s" % (
         ttype(mask2), ttype(g2), ttype(q2), ttype(k2), ttype(v2), ttype(q2)),
     ref.attention(q2, k2, v2, 0.35355339, causal=True, mask=mask2, gate=g2), q2.shape)
case("attention_cross_causal", [q, kc, vc],
     A + " {causal, scale = 0.35355339 : f32} : %s, %s, %s -> tensor<%dx%dx%dx%dxf32>" % (
         ttype(q), ttype(kc), ttype(vc), B, Hq, T, Dv),
     ref.attention(q, kc, vc, 0.35355339, causal=True), (B, Hq, T, Dv))

# gated.gate
x, gx = f32(2, 3, 4, 8), f32(2, 3, 4, 8)
case("gate_g2_sigmoid", [x, gx], "gated.gate G2 sigmoid multiply %%a0, %%a1 : %s, %s" % (ttype(x), ttype(gx)),
     ref.gate(x, gx), x.shape)
gb = f32(2, 3, 4, 1)
case("gate_headwise_silu_add", [x, gb], "gated.gate G5 silu add %%a0, %%a1 : %s, %s" % (ttype(x), ttype(gb)),
     ref.gate(x, gb, "silu", "add"), x.shape)

# gated.glu
xg, W, V = f32(2, 3, 16), f32(16, 24, scale=0.3), f32(16, 24, scale=0.3)
for act in ["sigmoid", "identity", "relu", "gelu", "gelu_tanh", "silu"]:
    case("glu_" + act, [xg, W, V],
         "gated.glu %s %%a0, %%a1, %%a2 : %s, %s, %s -> tensor<2x3x24xf32>" % (act, ttype(xg), ttype(W), ttype(V)),
         ref.glu(xg, W, V, act), (2, 3, 24))

# RecurrentGemma's GEGLU: biases on both projections; one on the up only.
bw_, bv_ = f32(24), f32(24)
case("glu_gelu_tanh_biases", [xg, W, V, bw_, bv_],
     "gated.glu gelu_tanh %%a0, %%a1, %%a2 w_bias(%%a3 : %s) v_bias(%%a4 : %s) : %s, %s, %s -> tensor<2x3x24xf32>" % (
         ttype(bw_), ttype(bv_), ttype(xg), ttype(W), ttype(V)),
     ref.glu(xg, W, V, "gelu_tanh", bw_, bv_), (2, 3, 24))
case("glu_silu_up_bias", [xg, W, V, bv_],
     "gated.glu silu %%a0, %%a1, %%a2 v_bias(%%a3 : %s) : %s, %s, %s -> tensor<2x3x24xf32>" % (
         ttype(bv_), ttype(xg), ttype(W), ttype(V)),
     ref.glu(xg, W, V, "silu", None, bv_), (2, 3, 24))

# gated.residual
xr, yr, gr = f32(2, 3, 16), f32(2, 3, 16), f32(2, 3, 16)
alpha, gamma = np.array([0.3], np.float32), f32(16, scale=0.1)
for kind, gate_v in [("add", None), ("input", gr), ("output", gr), ("highway", gr),
                     ("sigtanh", gr), ("gru", gr), ("tanh_scalar", alpha),
                     ("rezero", alpha), ("layerscale", gamma)]:
    ins = [xr, yr] + ([gate_v] if gate_v is not None else [])
    gtxt = " gate(%%a2 : %s)" % ttype(gate_v) if gate_v is not None else ""
    case("residual_" + kind, ins,
         "gated.residual %s %%a0, %%a1%s : %s, %s" % (kind, gtxt, ttype(xr), ttype(yr)),
         ref.residual(kind, xr, yr, gate_v), xr.shape)

# norms
wn, bn = f32(16), f32(16)
case("rms_norm", [xr, wn], "gated.rms_norm %%a0, %%a1 {epsilon = 1.0e-6 : f32} : %s, %s" % (ttype(xr), ttype(wn)),
     ref.rms_norm(xr, wn, 1e-6), xr.shape)
case("rms_norm_unit_offset", [xr, wn], "gated.rms_norm %%a0, %%a1 {epsilon = 1.0e-6 : f32, unit_offset} : %s, %s" % (ttype(xr), ttype(wn)),
     ref.rms_norm(xr, wn, 1e-6, unit_offset=True), xr.shape)
zr = f32(2, 3, 16, scale=2.0)
case("rms_norm_gated_silu", [xr, wn, zr],
     "gated.rms_norm %%a0, %%a1 gate(%%a2 : %s, silu) {epsilon = 1.0e-6 : f32} : %s, %s" % (
         ttype(zr), ttype(xr), ttype(wn)),
     ref.gated_rms_norm(xr, wn, zr, 1e-6, "silu"), xr.shape)
case("rms_norm_gated_sigmoid", [xr, wn, zr],
     "gated.rms_norm %%a0, %%a1 gate(%%a2 : %s, sigmoid) {epsilon = 1.0e-6 : f32} : %s, %s" % (
         ttype(zr), ttype(xr), ttype(wn)),
     ref.gated_rms_norm(xr, wn, zr, 1e-6, "sigmoid"), xr.shape)
case("rms_norm_gate_first_silu", [xr, wn, zr],
     "gated.rms_norm %%a0, %%a1 gate(%%a2 : %s, silu) {epsilon = 1.0e-6 : f32, gate_first} : %s, %s" % (
         ttype(zr), ttype(xr), ttype(wn)),
     ref.rms_norm(np.asarray(xr, np.float64) * ref.GATE_ACT["silu"](np.asarray(zr, np.float64)),
                  wn, 1e-6), xr.shape)

# gated.short_conv (LFM2): K = 3 and 4 taps, with and without a bias; a
# sequence shorter than the kernel (T = 2 < K: the taps before the start
# read 0), and a longer one.
for T_, K_, with_bias in [(9, 3, False), (2, 4, True), (33, 4, True)]:
    xs, bs, cs = f32(2, 5, T_), f32(2, 5, T_), f32(2, 5, T_)
    ws, bias_ = f32(5, 1, K_), f32(5)
    ins = [xs, bs, cs, ws] + ([bias_] if with_bias else [])
    btxt = " bias(%%a4 : %s)" % ttype(bias_) if with_bias else ""
    case("short_conv_t%d_k%d%s" % (T_, K_, "_bias" if with_bias else ""), ins,
         "gated.short_conv %%a0, %%a1, %%a2, %%a3%s : %s, %s" % (btxt, ttype(xs), ttype(ws)),
         ref.short_conv(xs, bs, cs, ws, bias_ if with_bias else None), xs.shape)

case("layer_norm_eps1", [xr, wn, bn], "gated.layer_norm %%a0, %%a1, %%a2 : %s {epsilon = 1.0 : f32} : %s, %s" % (ttype(bn), ttype(xr), ttype(wn)),
     ref.layer_norm(xr, wn, bn, 1.0), xr.shape)
case("layer_norm_nobias", [xr, wn], "gated.layer_norm %%a0, %%a1 {epsilon = 1.0e-5 : f32} : %s, %s" % (ttype(xr), ttype(wn)),
     ref.layer_norm(xr, wn, None, 1e-5), xr.shape)

# gated.router: both orders and normalisations, a [B, T, E] and a rank-1
# row, ties (the lower index first) and k = E.
def router_case(name, l, k, order, norm):
    w, i = ref.router(l, k, order, norm)
    shape = l.shape[:-1] + (k,)
    rt = "tensor<%sx%%s>" % "x".join(str(d) for d in shape)
    case_outs(name, [l],
              "gated.router %s %s %%%%a0, k = %d : %s -> %s, %s" % (
                  order, norm, k, ttype(l), rt % "f32", rt % "i64"),
              [(w, shape, "f32"), (i, shape, "i64")])


router_case("router_softmax_topk", f32(5, 8, scale=2.0), 3, "softmax_then_topk", "none")
router_case("router_renormalise", f32(2, 3, 8, scale=2.0), 2, "softmax_then_topk", "renormalise")
router_case("router_topk_softmax", f32(5, 8, scale=2.0), 2, "topk_then_softmax", "none")
router_case("router_rank1", f32(6), 2, "softmax_then_topk", "renormalise")
ties = np.array([[1.0, 2.0, 2.0, 0.5, 2.0], [0.0, 0.0, 0.0, 0.0, 0.0],
                 [-1.0, -3.0, -1.0, -3.0, -2.0]], np.float32)
router_case("router_ties", ties, 3, "softmax_then_topk", "none")
router_case("router_all_experts", ties, 5, "topk_then_softmax", "none")


def module():
    out = []
    for i, (name, inputs, op, outs) in enumerate(cases):
        out.append("func.func @case%d() {  // %s" % (i, name))
        for j, a in enumerate(inputs):
            out.append("  %%a%d = arith.constant %s : %s" % (j, literal(a), ttype(a)))
        out.append("  %%r%s = %s" % (":%d" % len(outs) if len(outs) > 1 else "",
                                      op.replace("%%", "%")))
        for n, (_, shape, t) in enumerate(outs):
            r = "%%r#%d" % n if len(outs) > 1 else "%r"
            rt = "tensor<%sx%s>" % ("x".join(str(d) for d in shape), t)
            out.append("  %%u%d = tensor.cast %s : %s to tensor<*x%s>" % (n, r, rt, t))
            out.append("  call @printMemref%s(%%u%d) : (tensor<*x%s>) -> ()"
                       % (t.upper(), n, t))
        out.append("  return\n}")
    out.append("func.func @main() {")
    for i in range(len(cases)):
        out.append("  call @case%d() : () -> ()" % i)
    out.append("  return\n}")
    out.append("func.func private @printMemrefF32(tensor<*xf32>)")
    out.append("func.func private @printMemrefI64(tensor<*xi64>)")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec-opt", default=os.path.join(ROOT, "build", "bin", "gatec-opt"))
    ap.add_argument("--mlir-runner", default=os.path.join(LLVM, "bin", "mlir-runner"))
    ap.add_argument("--keep", help="write the module and the lowered IR here")
    ap.add_argument("--attention", choices=["reference", "flash"], default="reference",
                    help="flash: gated.attention through --tile-attention (tiny tiles, "
                         "so rows span several query and key blocks)")
    args = ap.parse_args()
    text = module()
    pipeline = PIPELINE
    if args.attention == "flash":
        pipeline = ["--tile-attention=q-tile=2 k-tile=3"] + PIPELINE
    lowered = subprocess.run([args.gatec_opt, "-"] + pipeline, input=text,
                             capture_output=True, text=True)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        open(os.path.join(args.keep, "cases.mlir"), "w").write(text)
        open(os.path.join(args.keep, "lowered.mlir"), "w").write(lowered.stdout)
    if lowered.returncode != 0:
        sys.exit("lowering failed:\n" + lowered.stderr[:3000])
    libs = ",".join(os.path.join(LLVM, "lib", l) for l in
                    ["libmlir_runner_utils.so", "libmlir_c_runner_utils.so"])
    run = subprocess.run([args.mlir_runner, "-e", "main", "-entry-point-result=void",
                          "-shared-libs=" + libs], input=lowered.stdout,
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("mlir-runner failed:\n" + run.stderr[:3000])
    blocks = iter(run.stdout.split("Unranked Memref")[1:])
    nres = sum(len(outs) for *_, outs in cases)
    if len(run.stdout.split("Unranked Memref")) - 1 != nres:
        sys.exit("expected %d results, got %d" % (nres, len(run.stdout.split("Unranked Memref")) - 1))
    failures = 0
    for name, _, _, outs in cases:
        worst, ok = 0.0, True
        for want, shape, t in outs:
            data = next(blocks).split("data =", 1)[1]
            vals = np.array([float(x) for x in re.findall(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)", data)])
            got = vals.reshape(shape)
            err = np.abs(got - want) / (1 + np.abs(want))
            w = float(np.nanmax(err)) if err.size else 0.0
            worst = max(worst, w)
            ok = ok and np.all(np.isfinite(got)) and w <= (TOL if t == "f32" else 0.0)
        print("%s %-32s max scaled error %.2e" % ("ok  " if ok else "FAIL", name, worst))
        failures += not ok
    print("gated ops on the CPU (%s): %d cases, %d failures"
          % ("linalg lowering" if args.attention == "reference"
             else "attention by --tile-attention", len(cases), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
