#!/usr/bin/env python3
"""Integer Div models, their inputs and references
(test/Execution/integer-division.test).

usage: make_int_div_models.py OUTDIR
  div_i64.onnx, div_i32.onnx, div_u32.onnx  a / b, both inputs of shape [n]
  div_const.onnx                            a / [3, -1] (a constant divisor
                                            holding -1: no run-time check)
  div_zero.onnx                             a / [2, 0] (a constant 0)
  NAME_<case>_a.npy, NAME_<case>_b.npy, NAME_<case>_ref.npy
The references truncate toward zero (ONNX Div, C); x / -1 wraps (INT_MIN /
-1 = INT_MIN, as numpy): onnxruntime itself dies with SIGFPE there.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


def div(name, t):
    vi = helper.make_tensor_value_info
    save(name, [helper.make_node("Div", ["a", "b"], ["y"], name="div")],
         [vi("a", t, ["n"]), vi("b", t, ["n"])], [vi("y", t, ["n"])])


def trunc_div(a, b):
    """C division of integers, x / -1 wrapping."""
    with np.errstate(over="ignore"):
        q = np.abs(a.astype(object)) // np.abs(b.astype(object))
        q = np.where((a < 0) != (b < 0), -q, q)
        bits = a.dtype.itemsize * 8
        if np.issubdtype(a.dtype, np.signedinteger):
            q = (q + 2 ** (bits - 1)) % 2 ** bits - 2 ** (bits - 1)
        return q.astype(a.dtype)


def case(name, tag, a, b):
    np.save(os.path.join(out, "%s_%s_a.npy" % (name, tag)), a)
    np.save(os.path.join(out, "%s_%s_b.npy" % (name, tag)), b)
    if not (b == 0).any():
        np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)),
                trunc_div(a, b))


for name, t, dt in [("div_i64", TP.INT64, np.int64),
                    ("div_i32", TP.INT32, np.int32)]:
    div(name, t)
    lo = np.iinfo(dt).min
    case(name, "ok", np.array([7, -7, 7, -7, 0, lo, lo, 5], dt),
         np.array([2, 2, -2, -2, 3, -1, 1, -1], dt))
    case(name, "zero", np.array([7, -7, 5], dt), np.array([2, 2, 0], dt))
div("div_u32", TP.UINT32)
case("div_u32", "ok", np.array([7, 4294967295, 9], np.uint32),
     np.array([2, 4294967295, 1], np.uint32))
case("div_u32", "zero", np.array([7, 1], np.uint32), np.array([0, 1], np.uint32))

vi = helper.make_tensor_value_info
save("div_const", [helper.make_node("Div", ["a", "c"], ["y"], name="div")],
     [vi("a", TP.INT64, [2])], [vi("y", TP.INT64, [2])],
     [numpy_helper.from_array(np.array([3, -1], np.int64), "c")])
a = np.array([-7, np.iinfo(np.int64).min], np.int64)
np.save(os.path.join(out, "div_const_a.npy"), a)
np.save(os.path.join(out, "div_const_ref.npy"),
        trunc_div(a, np.array([3, -1], np.int64)))
save("div_zero", [helper.make_node("Div", ["a", "c"], ["y"], name="div")],
     [vi("a", TP.INT64, [2])], [vi("y", TP.INT64, [2])],
     [numpy_helper.from_array(np.array([2, 0], np.int64), "c")])
