#!/usr/bin/env python3
"""Runs every lowered onnx op form on the CPU and compares with onnxruntime.

Each case is a tiny ONNX graph (onnx.helper) whose inputs are graph inputs
(random, seeded; some with symbolic dims) and whose constant operands (axes,
starts, shapes) are initializers. All cases are put side by side in one
model, imported with `gatec --compile-to=onnx` (nothing raised, so every op
goes through --convert-onnx-to-linalg), lowered and executed by
mlir_run.run_model, and each output is compared with onnxruntime's:
floats within 1e-4 * (1 + |ref|), integers and bools exactly. If the
combined run fails, every case is run alone to name the failing ones.

usage: run_onnx_ops.py [--case NAME] [--keep DIR] [--list]
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlir_run  # noqa: E402

TOL = 1e-4
OPSET = 23
F, I64, I32, B, F16 = TP.FLOAT, TP.INT64, TP.INT32, TP.BOOL, TP.FLOAT16
INT64_MAX = np.iinfo(np.int64).max
rng = np.random.default_rng(20261201)


class Case:
    """nodes over local names; inputs: name -> array or (array, dims with
    names for symbolic ones); consts: name -> array (initializers);
    outputs: name -> element type."""

    def __init__(self, name, nodes, inputs, outputs, consts=None):
        self.name, self.nodes, self.inputs = name, nodes, inputs
        self.outputs, self.consts = outputs, consts or {}


cases = []


def case(name, nodes, inputs, outputs=None, consts=None):
    if not isinstance(nodes, list):
        nodes = [nodes]
    outputs = outputs or {"y": F}
    if not isinstance(outputs, dict):
        outputs = {o: F for o in outputs}
    cases.append(Case(name, nodes, inputs, outputs, consts))


def N(op, ins, outs="y", **attrs):
    return oh.make_node(op, ins, [outs] if isinstance(outs, str) else outs, **attrs)


def f32(*shape, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale, np.float32)


def pos(*shape):
    return (np.abs(rng.standard_normal(shape)) + 0.1).astype(np.float32)


def i64(*vals):
    return np.array(vals, np.int64)


def ints(*shape, lo=-9, hi=10, dtype=np.int64):
    return rng.integers(lo, hi, shape).astype(dtype)


def dyn(a, *dims):
    return (a, list(dims))


# --- element-wise -----------------------------------------------------------
for op in ["Sqrt", "Log"]:
    case(op.lower(), N(op, ["x"]), {"x": pos(2, 3, 4)})
for op in ["Reciprocal", "Neg", "Exp", "Sigmoid", "Tanh", "Relu", "Erf", "Cos",
           "Sin", "Abs", "Floor", "Ceil", "Softplus", "Identity"]:
    case(op.lower(), N(op, ["x"]), {"x": f32(2, 3, 4, scale=2.0)})
case("sigmoid_large", N("Sigmoid", ["x"]), {"x": np.array([-100, -20, 0, 20, 100], np.float32)})
case("gelu_erf", N("Gelu", ["x"]), {"x": f32(3, 5)})
case("gelu_tanh", N("Gelu", ["x"], approximate="tanh"), {"x": f32(3, 5)})
case("leaky_relu", N("LeakyRelu", ["x"], alpha=0.2), {"x": f32(3, 5)})
case("hard_sigmoid", N("HardSigmoid", ["x"], alpha=0.3, beta=0.4), {"x": f32(3, 5, scale=3)})
case("neg_int64", N("Neg", ["x"]), {"x": ints(2, 5)}, {"y": I64})
case("abs_int64", N("Abs", ["x"]), {"x": ints(2, 5)}, {"y": I64})
case("relu_int32", N("Relu", ["x"]), {"x": ints(2, 5, dtype=np.int32)}, {"y": I32})
case("sqrt_dynamic", N("Sqrt", ["x"]), {"x": dyn(pos(3, 4), "n", 4)})

case("add_bcast_last", N("Add", ["a", "b"]), {"a": f32(2, 3, 4), "b": f32(4)})
case("add_bcast_both", N("Add", ["a", "b"]), {"a": f32(2, 1, 4), "b": f32(3, 1)})
case("sub_scalar", N("Sub", ["a", "b"]), {"a": f32(2, 3), "b": f32()})
case("mul_bcast", N("Mul", ["a", "b"]), {"a": f32(1, 3, 1), "b": f32(2, 1, 4)})
case("div_float", N("Div", ["a", "b"]), {"a": f32(2, 3), "b": pos(2, 3)})
case("div_int64_truncates", N("Div", ["a", "b"]),
     {"a": i64(7, -7, 7, -7, 0, 9), "b": i64(2, 2, -2, -2, 3, 4)}, {"y": I64})
case("pow_float", N("Pow", ["a", "b"]), {"a": pos(2, 3), "b": f32(2, 3)})
case("pow_float_square", N("Pow", ["a", "b"]), {"a": f32(2, 3)}, consts={"b": np.array(2.0, np.float32)})
case("pow_float_int64", N("Pow", ["a", "b"]), {"a": f32(2, 3), "b": i64(3)})
case("pow_int64", N("Pow", ["a", "b"]), {"a": ints(2, 3, lo=-3, hi=4), "b": i64(0, 1, 3)}, {"y": I64})
case("max3", N("Max", ["a", "b", "c"]), {"a": f32(2, 3), "b": f32(3), "c": f32(2, 1)})
case("min2", N("Min", ["a", "b"]), {"a": f32(2, 3), "b": f32(2, 3)})
case("sum3", N("Sum", ["a", "b", "c"]), {"a": f32(2, 3), "b": f32(3), "c": f32(1)})
case("add_dynamic_bcast", N("Add", ["a", "b"]), {"a": dyn(f32(3, 5, 4), "n", "t", 4), "b": f32(4)})
case("mul_dynamic_both", N("Mul", ["a", "b"]), {"a": dyn(f32(3, 4), "n", 4), "b": dyn(f32(3, 1), "n", 1)})
case("add_int64", N("Add", ["a", "b"]), {"a": ints(2, 3), "b": ints(3)}, {"y": I64})
case("clip_min_max", N("Clip", ["x", "lo", "hi"]), {"x": f32(3, 4)},
     consts={"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)})
case("clip_min_only", N("Clip", ["x", "lo"]), {"x": f32(3, 4)}, consts={"lo": np.array(0.1, np.float32)})
case("where_bcast", N("Where", ["c", "a", "b"]),
     {"c": rng.random((2, 1, 4)) > 0.5, "a": f32(3, 1), "b": f32()})

rounded = np.round(f32(3, 4)).astype(np.float32)
for op in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
    case(op.lower(), N(op, ["a", "b"]), {"a": rounded, "b": np.round(f32(4)).astype(np.float32)}, {"y": B})
case("equal_int64", N("Equal", ["a", "b"]), {"a": ints(3, 4, lo=0, hi=3), "b": ints(4, lo=0, hi=3)}, {"y": B})
case("less_int64", N("Less", ["a", "b"]), {"a": ints(3, 4), "b": ints(1)}, {"y": B})
case("not", N("Not", ["a"]), {"a": rng.random((3, 4)) > 0.5}, {"y": B})
case("and", N("And", ["a", "b"]), {"a": rng.random((3, 4)) > 0.5, "b": rng.random(4) > 0.5}, {"y": B})
case("or", N("Or", ["a", "b"]), {"a": rng.random((3, 4)) > 0.5, "b": rng.random((3, 1)) > 0.5}, {"y": B})

trunc_in = np.array([-2.7, -0.5, -0.0, 0.5, 2.7, 3.9, 1e3], np.float32)
case("cast_f32_i64_truncates", N("Cast", ["x"], to=I64), {"x": trunc_in}, {"y": I64})
case("cast_f32_i32", N("Cast", ["x"], to=I32), {"x": trunc_in}, {"y": I32})
case("cast_f32_bool", N("Cast", ["x"], to=B), {"x": np.array([0, -0.0, 1.5, -2, np.nan], np.float32)}, {"y": B})
case("cast_bool_f32", N("Cast", ["x"], to=F), {"x": rng.random((2, 3)) > 0.5})
case("cast_bool_i64", N("Cast", ["x"], to=I64), {"x": rng.random((2, 3)) > 0.5}, {"y": I64})
case("cast_i64_f32", N("Cast", ["x"], to=F), {"x": ints(2, 3, lo=-1000, hi=1000)})
case("cast_i64_i32", N("Cast", ["x"], to=I32), {"x": ints(2, 3)}, {"y": I32})
case("cast_i32_i64", N("Cast", ["x"], to=I64), {"x": ints(2, 3, dtype=np.int32)}, {"y": I64})
case("cast_i64_bool", N("Cast", ["x"], to=B), {"x": i64(0, 1, -3, 0)}, {"y": B})
case("cast_f32_f16", N("Cast", ["x"], to=F16), {"x": f32(2, 3)}, {"y": F16})
case("cast_f16_f32", N("Cast", ["x"], to=F), {"x": f32(2, 3).astype(np.float16)})

# --- contractions -------------------------------------------------------------
case("matmul_2d", N("MatMul", ["a", "b"]), {"a": f32(3, 4), "b": f32(4, 5)})
case("matmul_batch_bcast", N("MatMul", ["a", "b"]), {"a": f32(2, 1, 3, 4), "b": f32(5, 4, 6)})
case("matmul_3d_2d", N("MatMul", ["a", "b"]), {"a": f32(2, 3, 4)}, consts={"b": f32(4, 5)})
case("matmul_vec_mat", N("MatMul", ["a", "b"]), {"a": f32(4), "b": f32(2, 4, 5)})
case("matmul_mat_vec", N("MatMul", ["a", "b"]), {"a": f32(2, 3, 4), "b": f32(4)})
case("matmul_vec_vec", N("MatMul", ["a", "b"]), {"a": f32(4), "b": f32(4)})
case("matmul_dynamic", N("MatMul", ["a", "b"]), {"a": dyn(f32(2, 5, 8), "n", "t", 8), "b": f32(8, 6)})
case("matmul_int64", N("MatMul", ["a", "b"]), {"a": ints(2, 3), "b": ints(3, 2)}, {"y": I64})
case("einsum_outer", N("Einsum", ["a", "b"], equation="i,j->ij"), {"a": f32(5), "b": f32(8)})
case("einsum_outer_dynamic", N("Einsum", ["a", "b"], equation="i,j->ij"), {"a": dyn(f32(5), "n"), "b": f32(8)})
case("einsum_bmm", N("Einsum", ["a", "b"], equation="bij,bjk->bik"), {"a": f32(2, 3, 4), "b": f32(2, 4, 5)})
case("einsum_attention", N("Einsum", ["q", "k"], equation="bhqd, bhkd -> bhqk"),
     {"q": f32(2, 3, 4, 8), "k": f32(2, 3, 5, 8)})
case("einsum_transpose", N("Einsum", ["a"], equation="ij->ji"), {"a": f32(3, 4)})
case("einsum_sum_all", N("Einsum", ["a"], equation="ij->"), {"a": f32(3, 4)})
case("einsum_implicit", N("Einsum", ["a", "b"], equation="ij,jk"), {"a": f32(3, 4), "b": f32(4, 5)})
case("einsum_ellipsis_bmm", N("Einsum", ["a", "b"], equation="...ij,...jk->...ik"),
     {"a": f32(2, 3, 4, 5), "b": f32(2, 3, 5, 2)})
case("einsum_ellipsis_implicit_diagonal", N("Einsum", ["a"], equation="...ii"), {"a": f32(3, 4, 4)})
case("einsum_trace", N("Einsum", ["a"], equation="ii->"), {"a": f32(5, 5)})
case("gemm", N("Gemm", ["a", "b", "c"]), {"a": f32(3, 4), "b": f32(4, 5), "c": f32(3, 5)})
case("gemm_trans_alpha_beta_vec", N("Gemm", ["a", "b", "c"], transA=1, transB=1, alpha=0.5, beta=-2.0),
     {"a": f32(4, 3), "b": f32(5, 4), "c": f32(5)})
case("gemm_no_c_dynamic", N("Gemm", ["a", "b"], transB=1), {"a": dyn(f32(3, 4), "n", 4), "b": f32(6, 4)})
case("gemm_scalar_c", N("Gemm", ["a", "b", "c"], beta=0.5), {"a": f32(2, 3), "b": f32(3, 2), "c": f32()})

# --- Conv: dense, grouped, depthwise; pads, strides, dilations, auto_pad ------
# The causal depthwise conv1d of a Gated DeltaNet / Mamba layer: kernel 4,
# group = channels, pads [3, 0] (left only), SiLU after; sequence symbolic.
case("conv1d_depthwise_causal_silu",
     [N("Conv", ["x", "w", "b"], "c", group=8, pads=[3, 0]), N("Sigmoid", ["c"], "s"),
      N("Mul", ["c", "s"])],
     {"x": dyn(f32(2, 8, 11), "n", 8, "t")}, consts={"w": f32(8, 1, 4), "b": f32(8)})
case("conv1d_depthwise_pad_slice",  # pads [3, 3] then the first T outputs
     [N("Conv", ["x", "w"], "c", group=6, pads=[3, 3]), N("Slice", ["c", "st", "en", "ax"])],
     {"x": f32(1, 6, 9)}, consts={"w": f32(6, 1, 4), "st": i64(0), "en": i64(9), "ax": i64(2)})
case("conv1d_dense_stride_dilation", N("Conv", ["x", "w", "b"], strides=[2], dilations=[2], pads=[1, 2]),
     {"x": f32(2, 3, 13)}, consts={"w": f32(5, 3, 3), "b": f32(5)})
case("conv1d_grouped_same_upper", N("Conv", ["x", "w"], group=2, auto_pad="SAME_UPPER", strides=[2]),
     {"x": dyn(f32(1, 4, 10), 1, 4, "t")}, consts={"w": f32(6, 2, 4)})
case("conv1d_same_lower", N("Conv", ["x", "w"], auto_pad="SAME_LOWER"),
     {"x": f32(1, 2, 7)}, consts={"w": f32(3, 2, 4)})
case("conv2d_dense_bias", N("Conv", ["x", "w", "b"], pads=[1, 0, 1, 2], strides=[1, 2]),
     {"x": f32(2, 3, 6, 7)}, consts={"w": f32(4, 3, 3, 2), "b": f32(4)})
case("conv2d_depthwise_valid", N("Conv", ["x", "w"], group=4, auto_pad="VALID", kernel_shape=[3, 3]),
     {"x": f32(1, 4, 5, 6)}, consts={"w": f32(8, 1, 3, 3)})

# --- unsigned integers, activations, casts -------------------------------------
U8, U16, U32, U64 = TP.UINT8, TP.UINT16, TP.UINT32, TP.UINT64


def uints(*shape, hi=250, dtype=np.uint8):
    return rng.integers(1, hi, shape).astype(dtype)


case("add_uint8_wraps", N("Add", ["a", "b"]), {"a": uints(3, 4), "b": uints(4)}, {"y": U8})
case("div_uint8", N("Div", ["a", "b"]), {"a": uints(3, 4), "b": uints(3, 4, hi=20)}, {"y": U8})
case("div_uint64_large", N("Div", ["a", "b"]),
     {"a": np.array([2**63 + 10, 7, 2**64 - 1], np.uint64), "b": np.array([3, 2, 2**63], np.uint64)}, {"y": U64})
case("sub_uint16_wraps", N("Sub", ["a", "b"]), {"a": uints(5, dtype=np.uint16), "b": uints(5, dtype=np.uint16)},
     {"y": U16})
case("max_uint32", N("Max", ["a", "b"]),
     {"a": np.array([2**31 + 5, 1, 7], np.uint32), "b": np.array([3, 2**32 - 1, 7], np.uint32)}, {"y": U32})
case("min_uint8", N("Min", ["a", "b"]), {"a": np.array([200, 1, 7], np.uint8), "b": np.array([3, 255, 9], np.uint8)},
     {"y": U8})
case("less_uint8", N("Less", ["a", "b"]), {"a": np.array([200, 1, 7], np.uint8), "b": np.array([3, 255, 7], np.uint8)},
     {"y": B})
case("greater_equal_uint64", N("GreaterOrEqual", ["a", "b"]),
     {"a": np.array([2**63, 1, 7], np.uint64), "b": np.array([3, 2**63, 7], np.uint64)}, {"y": B})
case("cast_uint8_f32", N("Cast", ["x"], to=F), {"x": np.array([0, 1, 128, 255], np.uint8)})
case("cast_uint8_i64", N("Cast", ["x"], to=I64), {"x": np.array([0, 1, 128, 255], np.uint8)}, {"y": I64})
case("cast_f32_uint8", N("Cast", ["x"], to=U8), {"x": np.array([0.0, 1.7, 128.2, 254.9], np.float32)}, {"y": U8})
case("cast_i8_uint16_sign_extends", N("Cast", ["x"], to=U16), {"x": np.array([-1, 5, -128], np.int8)}, {"y": U16})
case("castlike_f32_f16", N("CastLike", ["x", "t"]), {"x": f32(2, 3), "t": f32(1).astype(np.float16)}, {"y": F16})
case("reduce_max_uint8", N("ReduceMax", ["x", "ax"], keepdims=0), {"x": uints(3, 4)}, {"y": U8},
     consts={"ax": i64(1)})
case("reduce_min_uint8", N("ReduceMin", ["x", "ax"]), {"x": uints(3, 4)}, {"y": U8},
     consts={"ax": i64(0)})
case("reduce_max_bool", N("ReduceMax", ["x", "ax"], keepdims=0), {"x": rng.random((3, 4)) > 0.7}, {"y": B},
     consts={"ax": i64(1)})
case("reduce_min_bool", N("ReduceMin", ["x", "ax"], keepdims=0), {"x": rng.random((3, 4)) > 0.3}, {"y": B},
     consts={"ax": i64(1)})
case("sign_float", N("Sign", ["x"]), {"x": np.array([-2.5, -0.0, 0.0, 3.0, np.inf, -np.inf], np.float32)})
case("sign_int32", N("Sign", ["x"]), {"x": np.array([-7, 0, 9], np.int32)}, {"y": I32})
case("sign_uint8", N("Sign", ["x"]), {"x": np.array([0, 1, 255], np.uint8)}, {"y": U8})
special = np.array([1.0, np.inf, -np.inf, np.nan, 0.0, -3.0], np.float32)
case("isinf", N("IsInf", ["x"]), {"x": special}, {"y": B})
case("isinf_negative_only", N("IsInf", ["x"], detect_positive=0), {"x": special}, {"y": B})
case("isnan", N("IsNaN", ["x"]), {"x": special}, {"y": B})
case("dropout_inference", N("Dropout", ["x", "r"], ["y", "m"]), {"x": f32(3, 4)}, {"y": F, "m": B},
     consts={"r": np.array(0.3, np.float32)})

cos_cache, sin_cache = np.cos(f32(10, 4)), np.sin(f32(10, 4))
case("rotary_4d_halves", N("RotaryEmbedding", ["x", "c", "s", "p"]),
     {"x": f32(2, 3, 5, 8), "p": ints(2, 5, lo=0, hi=10)}, consts={"c": cos_cache, "s": sin_cache})
case("rotary_3d_interleaved_partial", N("RotaryEmbedding", ["x", "c", "s", "p"], interleaved=1, num_heads=2,
                                        rotary_embedding_dim=6),
     {"x": f32(2, 5, 20), "p": ints(2, 5, lo=0, hi=10)},
     consts={"c": np.cos(f32(10, 3)), "s": np.sin(f32(10, 3))})
case("rotary_no_position_ids", N("RotaryEmbedding", ["x", "c", "s"]),
     {"x": f32(1, 2, 3, 4), "c": np.cos(f32(1, 3, 2)), "s": np.sin(f32(1, 3, 2))})

case("attention_past_softcap_causal_gqa",
     N("Attention", ["q", "k", "v", "m", "pk", "pv"], ["y", "ck", "cv"], is_causal=1, softcap=2.0),
     {"q": f32(2, 4, 3, 8), "k": f32(2, 2, 3, 8), "v": f32(2, 2, 3, 6), "m": rng.random((3, 5)) > 0.2,
      "pk": f32(2, 2, 2, 8), "pv": f32(2, 2, 2, 6)}, ["y", "ck", "cv"])
case("attention_3d_qk_output_bias", N("Attention", ["q", "k", "v", "m"], ["y", "", "", "qk"], q_num_heads=2,
                                      kv_num_heads=2, qk_matmul_output_mode=2, scale=0.3),
     {"q": f32(2, 3, 8), "k": f32(2, 5, 8), "v": f32(2, 5, 4), "m": f32(2, 1, 3, 5)}, ["y", "qk"])

# --- CumSum and reductions whose axes are graph inputs ---------------------------
for ex in [0, 1]:
    for rev in [0, 1]:
        case("cumsum_axis1_ex%d_rev%d" % (ex, rev), N("CumSum", ["x", "a"], exclusive=ex, reverse=rev),
             {"x": f32(3, 5)}, consts={"a": np.array(1, np.int64)})
case("cumsum_runtime_axis", N("CumSum", ["x", "a"], reverse=1), {"x": f32(2, 3, 4), "a": np.array(-3, np.int32)})
case("cumsum_int64_dynamic", N("CumSum", ["x", "a"]), {"x": dyn(ints(3, 4), "n", 4), "a": np.array(0, np.int64)},
     {"y": I64})
case("reduce_sum_runtime_axes_keep", N("ReduceSum", ["x", "ax"]), {"x": f32(2, 3, 4), "ax": i64(0, -1)})
case("reduce_mean_runtime_axes", N("ReduceMean", ["x", "ax"], keepdims=0), {"x": f32(2, 3, 4), "ax": i64(1)})
case("reduce_max_runtime_axes_dynamic", N("ReduceMax", ["x", "ax"], keepdims=0),
     {"x": dyn(f32(3, 4, 5), "n", 4, 5), "ax": i64(2, 0)})
case("reduce_l2_runtime_noop_empty", N("ReduceL2", ["x", "ax"], noop_with_empty_axes=1),
     {"x": f32(2, 3), "ax": np.zeros(0, np.int64)})
case("reduce_prod_runtime_axes_int64", N("ReduceProd", ["x", "ax"], keepdims=0),
     {"x": ints(2, 3, lo=-3, hi=4), "ax": i64(1)}, {"y": I64})

# --- reductions and normalisations ---------------------------------------------
case("reduce_mean_last_keep", N("ReduceMean", ["x", "ax"]), {"x": f32(2, 3, 4)}, consts={"ax": i64(-1)})
case("reduce_sum_02", N("ReduceSum", ["x", "ax"], keepdims=0), {"x": f32(2, 3, 4)}, consts={"ax": i64(0, 2)})
case("reduce_max_all", N("ReduceMax", ["x"], keepdims=0), {"x": f32(2, 3, 4)})
case("reduce_min_keep_all", N("ReduceMin", ["x"]), {"x": f32(2, 3)})
case("reduce_prod", N("ReduceProd", ["x", "ax"]), {"x": f32(2, 3, 4)}, consts={"ax": i64(1)})
case("reduce_l2", N("ReduceL2", ["x", "ax"], keepdims=0), {"x": f32(2, 3, 4)}, consts={"ax": i64(2)})
case("reduce_sum_int64", N("ReduceSum", ["x", "ax"]), {"x": ints(2, 3, 4)}, {"y": I64}, consts={"ax": i64(1)})
case("reduce_sum_noop", N("ReduceSum", ["x"], noop_with_empty_axes=1), {"x": f32(2, 3)})
case("reduce_mean_dynamic", N("ReduceMean", ["x", "ax"], keepdims=0), {"x": dyn(f32(3, 8), "n", 8)},
     consts={"ax": i64(0)})
case("softmax_last", N("Softmax", ["x"]), {"x": f32(2, 3, 5, scale=3)})
case("softmax_axis1", N("Softmax", ["x"], axis=1), {"x": f32(2, 3, 5, scale=3)})
case("softmax_dynamic", N("Softmax", ["x"]), {"x": dyn(f32(3, 7), "n", "m")})
case("log_softmax", N("LogSoftmax", ["x"]), {"x": f32(2, 6)})
case("layer_norm", N("LayerNormalization", ["x", "s", "b"], epsilon=1e-5), {"x": f32(2, 3, 8)},
     consts={"s": f32(8), "b": f32(8)})
case("layer_norm_axis1_nobias", N("LayerNormalization", ["x", "s"], axis=1), {"x": f32(2, 3, 4)},
     consts={"s": f32(3, 4)})
case("layer_norm_stats", N("LayerNormalization", ["x", "s", "b"], ["y", "mean", "inv"]),
     {"x": dyn(f32(3, 8), "n", 8)}, ["y", "mean", "inv"], consts={"s": f32(8), "b": f32(8)})
case("rms_norm", N("RMSNormalization", ["x", "s"], epsilon=1e-6), {"x": f32(2, 3, 8)}, consts={"s": f32(8)})

# --- shape computations ------------------------------------------------------------
case("shape", N("Shape", ["x"]), {"x": dyn(f32(3, 5, 4), "n", "t", 4)}, {"y": I64})
case("shape_start_end", N("Shape", ["x"], start=0, end=-1), {"x": dyn(f32(3, 5, 4), "n", "t", 4)}, {"y": I64})
case("size", N("Size", ["x"]), {"x": dyn(f32(3, 4), "n", 4)}, {"y": I64})
case("gather_shape_scalar", [N("Shape", ["x"], "s"), N("Gather", ["s", "i"])],
     {"x": dyn(f32(3, 5, 4), "n", "t", 4)}, {"y": I64}, consts={"i": np.array(1, np.int64)})
case("constant_of_shape", [N("Shape", ["x"], "s"),
                           N("ConstantOfShape", ["s"], value=numpy_helper.from_array(np.array([1.5], np.float32)))],
     {"x": dyn(f32(3, 4), "n", 4)})


def runtime_shape(*parts):
    """Nodes computing `shp` = Concat of the parts: a str is a scalar graph
    input (unsqueezed), an int a constant; the length is known to shape
    inference, the input elements are not."""
    nodes, names = [], []
    for k, p in enumerate(parts):
        if isinstance(p, str):
            nodes.append(N("Unsqueeze", [p, "ax0"], p + "_u"))
            names.append(p + "_u")
        else:
            names.append("k%d" % k)
    nodes.append(N("Concat", names, "shp", axis=0))
    consts = {"k%d" % k: i64(p) for k, p in enumerate(parts) if not isinstance(p, str)}
    consts["ax0"] = i64(0)
    return nodes, consts


def scalar64(v):
    return np.array(v, np.int64)


nodes, consts = runtime_shape("a", 3)
case("constant_of_shape_runtime", nodes + [N("ConstantOfShape", ["shp"], value=numpy_helper.from_array(i64(7)))],
     {"a": scalar64(2)}, {"y": I64}, consts)
case("range_float", N("Range", ["a", "b", "d"]),
     {"a": np.array(0.5, np.float32), "b": np.array(5.2, np.float32), "d": np.array(0.7, np.float32)})
case("range_int_negative", N("Range", ["a", "b", "d"]),
     {"a": np.array(10, np.int64), "b": np.array(-3, np.int64), "d": np.array(-4, np.int64)}, {"y": I64})
case("range_from_shape", [N("Shape", ["x"], "s"), N("Gather", ["s", "i"], "t"), N("Cast", ["t"], "tf", to=F),
                          N("Range", ["z", "tf", "one"])],
     {"x": dyn(f32(2, 5, 4), "n", "t", 4)},
     consts={"i": np.array(1, np.int64), "z": np.array(0, np.float32), "one": np.array(1, np.float32)})

# --- data movement -----------------------------------------------------------------
case("reshape_static", N("Reshape", ["x", "s"]), {"x": f32(2, 3, 4)}, consts={"s": i64(0, -1, 2)})
case("reshape_permuted", N("Reshape", ["x", "s"]), {"x": f32(2, 3)}, consts={"s": i64(3, 2)})
case("reshape_to_scalar", N("Reshape", ["x", "s"]), {"x": f32(1, 1)}, consts={"s": np.zeros(0, np.int64)})
case("reshape_allowzero", N("Reshape", ["x", "s"], allowzero=1), {"x": f32(2, 3, 4)}, consts={"s": i64(4, 6)})
nodes, consts = runtime_shape("a", "b", 2)
case("reshape_runtime_zero_minus_one", nodes + [N("Reshape", ["x", "shp"])],
     {"x": f32(2, 3, 4), "a": scalar64(0), "b": scalar64(-1)}, consts=consts)
case("reshape_runtime_dynamic", nodes + [N("Reshape", ["x", "shp"])],
     {"x": dyn(f32(2, 3, 4), "n", "t", 4), "a": scalar64(-1), "b": scalar64(6)}, consts=consts)
heads = [N("Shape", ["x"], "s"), N("Gather", ["s", "i0"], "b"), N("Gather", ["s", "i1"], "t"),
         N("Unsqueeze", ["b", "ax0"], "bu"), N("Unsqueeze", ["t", "ax0"], "tu"),
         N("Concat", ["bu", "tu", "h", "d"], "shp", axis=0), N("Reshape", ["x", "shp"], "r4")]
head_consts = {"i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "ax0": i64(0),
               "h": i64(3), "d": i64(-1), "m1": i64(-1)}
case("reshape_shape_chain_expand", heads + [N("Identity", ["r4"])],
     {"x": dyn(f32(2, 5, 12), "n", "t", 12)}, consts=head_consts)
case("reshape_shape_chain_back", heads + [N("Transpose", ["r4"], "tr", perm=[0, 2, 1, 3]),
                                          N("Concat", ["bu", "tu", "m1"], "shp2", axis=0),
                                          N("Reshape", ["tr", "shp2"])],
     {"x": dyn(f32(2, 5, 12), "n", "t", 12)}, consts=head_consts)
case("reshape_swap_dynamic_dims", [N("Shape", ["x"], "s"), N("Gather", ["s", "i0"], "b"), N("Gather", ["s", "i1"], "t"),
                                   N("Unsqueeze", ["b", "ax0"], "bu"), N("Unsqueeze", ["t", "ax0"], "tu"),
                                   N("Concat", ["tu", "bu", "m1"], "shp", axis=0), N("Reshape", ["x", "shp"])],
     {"x": dyn(f32(2, 5, 4), "n", "t", 4)}, consts=head_consts)
case("reshape_collapse_dynamic", [N("Shape", ["x"], "s"), N("Gather", ["s", "i2"], "c"),
                                  N("Unsqueeze", ["c", "ax0"], "cu"),
                                  N("Concat", ["m1", "cu"], "shp", axis=0), N("Reshape", ["x", "shp"])],
     {"x": dyn(f32(2, 5, 4), "n", "t", "c")}, consts={"i2": np.array(2, np.int64), "ax0": i64(0), "m1": i64(-1)})
case("flatten_axis1", N("Flatten", ["x"]), {"x": f32(2, 3, 4)})
case("flatten_axis0", N("Flatten", ["x"], axis=0), {"x": f32(2, 3, 4)})
case("flatten_axis_last", N("Flatten", ["x"], axis=-1), {"x": dyn(f32(2, 3, 4), "n", 3, 4)})
case("flatten_axis_rank", N("Flatten", ["x"], axis=3), {"x": f32(2, 3, 4)})
case("transpose_default", N("Transpose", ["x"]), {"x": f32(2, 3, 4)})
case("transpose_perm_dynamic", N("Transpose", ["x"], perm=[0, 2, 1, 3]), {"x": dyn(f32(2, 3, 4, 5), "n", "t", 4, 5)})
case("unsqueeze", N("Unsqueeze", ["x", "ax"]), {"x": f32(2, 3)}, consts={"ax": i64(0, -1)})
case("unsqueeze_scalar", N("Unsqueeze", ["x", "ax"]), {"x": f32()}, consts={"ax": i64(0, 1)})
case("unsqueeze_dynamic", N("Unsqueeze", ["x", "ax"]), {"x": dyn(f32(3, 4), "n", 4)}, consts={"ax": i64(1)})
case("squeeze_axes", N("Squeeze", ["x", "ax"]), {"x": f32(1, 3, 1, 2)}, consts={"ax": i64(2)})
case("squeeze_all_ones", N("Squeeze", ["x"]), {"x": f32(1, 3, 1, 2)})
case("squeeze_to_scalar", N("Squeeze", ["x"]), {"x": f32(1, 1)})
case("squeeze_dynamic", N("Squeeze", ["x", "ax"]), {"x": dyn(f32(1, 3), 1, "n")}, consts={"ax": i64(0)})
case("concat3", N("Concat", ["a", "b", "c"], axis=1), {"a": f32(2, 1, 3), "b": f32(2, 4, 3), "c": f32(2, 2, 3)})
case("concat_negative_axis_dynamic", N("Concat", ["a", "b"], axis=-1),
     {"a": dyn(f32(3, 2), "n", 2), "b": dyn(f32(3, 5), "n", "m")})
case("concat_int64", N("Concat", ["a", "b"], axis=0), {"a": i64(1, 2), "b": i64(3)}, {"y": I64})
case("slice_basic", N("Slice", ["x", "st", "en"]), {"x": f32(6, 8)}, consts={"st": i64(1, 2), "en": i64(4, 7)})
case("slice_negative_max_end", N("Slice", ["x", "st", "en", "ax"]), {"x": f32(6, 8)},
     consts={"st": i64(-3), "en": i64(INT64_MAX), "ax": i64(-1)})
case("slice_steps", N("Slice", ["x", "st", "en", "ax", "sp"]), {"x": f32(6, 8)},
     consts={"st": i64(0, 1), "en": i64(6, -1), "ax": i64(0, 1), "sp": i64(2, 3)})
case("slice_clamped", N("Slice", ["x", "st", "en"]), {"x": f32(6, 8)}, consts={"st": i64(-100, 5), "en": i64(100, 3)})
case("slice_dynamic", N("Slice", ["x", "st", "en", "ax", "sp"]), {"x": dyn(f32(7, 10), "n", "m")},
     consts={"st": i64(1, -4), "en": i64(INT64_MAX, -1), "ax": i64(0, 1), "sp": i64(2, 1)})
case("split_sizes", N("Split", ["x", "sp"], ["y0", "y1", "y2"], axis=1), {"x": f32(2, 6)},
     ["y0", "y1", "y2"], consts={"sp": i64(1, 2, 3)})
case("split_num_outputs_uneven", N("Split", ["x"], ["y0", "y1", "y2"], axis=0, num_outputs=3), {"x": f32(5, 2)},
     ["y0", "y1", "y2"])
case("split_equal_dynamic", N("Split", ["x"], ["y0", "y1"], axis=-1, num_outputs=2),
     {"x": dyn(f32(3, 6), "n", 6)}, ["y0", "y1"])
case("slice_runtime_inputs", N("Slice", ["x", "st", "en", "ax", "sp"]),
     {"x": f32(6, 8), "st": i64(1, -2), "en": i64(INT64_MAX, 0), "ax": i64(0, -1), "sp": i64(2, -2)})
case("slice_negative_step_const", N("Slice", ["x", "st", "en", "ax", "sp"]), {"x": f32(5, 4)},
     consts={"st": i64(-1), "en": i64(-INT64_MAX), "ax": i64(0), "sp": i64(-1)})
case("slice_runtime_dynamic", N("Slice", ["x", "st", "en"]), {"x": dyn(f32(7, 4), "n", 4), "st": i64(2), "en": i64(-1)})
case("split_runtime_sizes", N("Split", ["x", "sp"], ["y0", "y1"], axis=1), {"x": f32(2, 6), "sp": i64(2, 4)},
     ["y0", "y1"])
case("unsqueeze_runtime_axes", N("Unsqueeze", ["x", "ax"]), {"x": dyn(f32(3, 4), "n", 4), "ax": i64(-1, 0)})
case("squeeze_runtime_axes", N("Squeeze", ["x", "ax"]), {"x": dyn(f32(1, 3, 1), 1, "n", 1), "ax": i64(2, 0)})
case("expand", N("Expand", ["x", "s"]), {"x": f32(3, 1)}, consts={"s": i64(2, 3, 4)})
nodes, consts = runtime_shape("a", 1, "b")
case("expand_runtime_shape", nodes + [N("Expand", ["x", "shp"])],
     {"x": f32(3, 1), "a": scalar64(2), "b": scalar64(5)}, consts=consts)
case("gather_axis0", N("Gather", ["d", "i"]), {"d": f32(5, 4), "i": i64(0, -1, 2, 2).reshape(2, 2)})
case("gather_axis1", N("Gather", ["d", "i"], axis=1), {"d": f32(2, 5, 3), "i": i64(-1, 0, 3)})
case("gather_int32_indices", N("Gather", ["d", "i"]), {"d": f32(5, 4), "i": np.array([4, 1], np.int32)})
case("tile", N("Tile", ["x", "r"]), {"x": f32(2, 3)}, consts={"r": i64(2, 3)})
nodes, consts = runtime_shape("a", 1)
case("tile_runtime_repeats", nodes + [N("Tile", ["x", "shp"])], {"x": f32(2, 3), "a": scalar64(3)}, consts=consts)
case("trilu_upper", N("Trilu", ["x"]), {"x": f32(4, 5)})
case("trilu_lower_k", N("Trilu", ["x", "k"], upper=0), {"x": f32(2, 4, 4)}, consts={"k": np.array(-1, np.int64)})
case("trilu_upper_k2", N("Trilu", ["x", "k"]), {"x": f32(3, 6)}, consts={"k": np.array(2, np.int64)})


def prefixed(i, name):
    return "c%d_%s" % (i, name) if name else ""


def build(selected):
    """One model holding the selected cases side by side."""
    nodes, inputs, outputs, inits, feeds = [], [], [], [], []
    for i, c in selected:
        for n in c.nodes:
            m = onnx.NodeProto()
            m.CopyFrom(n)
            m.input[:] = [prefixed(i, x) for x in n.input]
            m.output[:] = [prefixed(i, x) for x in n.output]
            nodes.append(m)
        for name, spec in c.inputs.items():
            a, dims = spec if isinstance(spec, tuple) else (spec, list(spec.shape))
            dims = [d if isinstance(d, int) else "c%d_%s" % (i, d) for d in dims]
            elem = oh.np_dtype_to_tensor_dtype(a.dtype)
            inputs.append(oh.make_tensor_value_info(prefixed(i, name), elem, dims))
            feeds.append(a)
        for name, a in c.consts.items():
            inits.append(numpy_helper.from_array(a, prefixed(i, name)))
        for name, elem in c.outputs.items():
            outputs.append(oh.make_tensor_value_info(prefixed(i, name), elem, None))
    g = oh.make_graph(nodes, "onnx_ops", inputs, outputs, inits)
    model = oh.make_model(g, opset_imports=[oh.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model, feeds


def reference(path, feeds):
    return mlir_run.reference(path, feeds)


def run(selected, tmp, keep=None):
    """(reference outputs, gatec outputs or the error) of the cases."""
    model, feeds = build(selected)
    path = os.path.join(tmp, "ops.onnx")
    onnx.save(model, path)
    want = reference(path, feeds)
    try:
        got = mlir_run.run_model(path, feeds, keep=keep, phase="onnx")
    except mlir_run.RunError as e:
        return want, str(e)
    return want, got


def report(selected, want, got):
    failures, k = 0, 0
    for i, c in selected:
        worst = 0.0
        for _ in c.outputs:
            worst = max(worst, mlir_run.scaled_error(got[k], want[k]))
            k += 1
        ok = worst <= TOL
        failures += not ok
        print("%s %-36s max scaled error %.2e" % ("ok  " if ok else "FAIL", c.name, worst))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", help="run only this case")
    ap.add_argument("--keep", help="write the model's IR and its lowering here")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--gatec", default=mlir_run.TOOLS["gatec"])
    ap.add_argument("--gatec-opt", default=mlir_run.TOOLS["gatec_opt"])
    args = ap.parse_args()
    mlir_run.TOOLS.update(gatec=args.gatec, gatec_opt=args.gatec_opt)
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    selected = [(i, c) for i, c in enumerate(cases) if not args.case or c.name == args.case]
    if not selected:
        sys.exit("no case " + args.case)
    with tempfile.TemporaryDirectory() as tmp:
        want, got = run(selected, tmp, args.keep)
        if isinstance(got, str):  # find the failing cases one by one
            print("the combined run failed; running each case alone:\n" + got[:3000])
            failures = 0
            for i, c in selected:
                w, g = run([(i, c)], tmp)
                if isinstance(g, str):
                    errors = [x for x in g.splitlines() if "error" in x] or g.splitlines()[-1:]
                    print("FAIL %-36s %s" % (c.name, errors[0][:300] if errors else ""))
                    failures += 1
                else:
                    failures += report([(i, c)], w, g)
        else:
            failures = report(selected, want, got)
    print("onnx ops on the CPU (linalg lowering): %d cases, %d failures" % (len(selected), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
