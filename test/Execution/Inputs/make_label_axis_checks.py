#!/usr/bin/env python3
"""Models whose sizes or axes are only known to be wrong at run time, for
test/Execution/label-axis-checks.test (onnxruntime fails each bad run, so
must gatec, with the node's name), and a valid run of each against
onnxruntime.

usage: make_label_axis_checks.py OUTDIR
  slice_axes.onnx     Slice with run-time starts/ends/axes over x[4, 6]
  slice_dup.onnx      Slice with constant axes [0, 0] (a compile error)
  einsum.onnx         Einsum "ij,jk->ik" over a[M, J], b[J2, K]
  einsum_diag.onnx    Einsum "ii->i" over a[M, N]
  nonpad.onnx         Attention-24 with nonpad_kv_seqlen over S keys
  range_f.onnx        Range with float initializers start 0.5, delta 0.25
                      (it compiled to an error of the weight accounting)
  cast_nan.onnx       Cast f32 -> i32 of NaN, ±inf, ±3e9, ±2.7 (undefined in
                      ONNX; gatec gives what onnxruntime gives on x86)
  shape_rt.onnx       ConstantOfShape(s) + Expand(x[1, 1, 4], s), s a
                      run-time shape of length 3 (they imported unranked and
                      did not compile)
  <model>_<case>_in<k>.npy, <model>_<case>_ref0.npy (valid cases only)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
ort.set_default_logger_severity(4)  # the bad runs fail there too
rng = np.random.default_rng(2)
vi = helper.make_tensor_value_info
i64 = lambda *v: np.array(v, np.int64)


def model(name, nodes, ins, outs, inits=(), opset=17):
    m = helper.make_model(helper.make_graph(nodes, name, ins, outs, list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    return path


def case(path, name, tag, inputs, ok):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
    for k, a in enumerate(inputs):
        np.save(os.path.join(out, f"{name}_{tag}_in{k}.npy"), a)
    try:
        (r,) = sess.run(None, feeds)
    except Exception:
        assert not ok, (name, tag)
        return
    assert ok, (name, tag)
    np.save(os.path.join(out, f"{name}_{tag}_ref0.npy"), r)


x = np.arange(24, dtype=np.float32).reshape(4, 6)
p = model("slice_axes", [helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="sl")],
          [vi("x", TP.FLOAT, [4, 6]), vi("s", TP.INT64, [2]), vi("e", TP.INT64, [2]),
           vi("a", TP.INT64, [2])], [vi("y", TP.FLOAT, ["r", "c"])])
case(p, "slice_axes", "ok", [x, i64(1, 0), i64(3, 2), i64(0, -1)], True)
case(p, "slice_axes", "dup", [x, i64(1, 0), i64(3, 2), i64(0, -2)], False)
g = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a"], ["y"], name="sl")],
                      "slice_dup", [vi("x", TP.FLOAT, [4, 6])], [vi("y", TP.FLOAT, None)],
                      [numpy_helper.from_array(i64(1, 0), "s"),
                       numpy_helper.from_array(i64(3, 2), "e"),
                       numpy_helper.from_array(i64(0, 0), "a")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
          os.path.join(out, "slice_dup.onnx"))

f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
p = model("einsum", [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik",
                                      name="es")],
          [vi("a", TP.FLOAT, ["M", "J"]), vi("b", TP.FLOAT, ["J2", "K"])],
          [vi("y", TP.FLOAT, ["M", "K"])])
case(p, "einsum", "ok", [f32(2, 3), f32(3, 5)], True)
case(p, "einsum", "bad", [f32(2, 3), f32(4, 5)], False)
p = model("einsum_diag", [helper.make_node("Einsum", ["a"], ["y"], equation="ii->i",
                                           name="diag")],
          [vi("a", TP.FLOAT, ["M", "N"])], [vi("y", TP.FLOAT, ["M"])])
case(p, "einsum_diag", "ok", [f32(3, 3)], True)
case(p, "einsum_diag", "bad", [f32(2, 3)], False)

p = model("nonpad", [helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"],
                                      name="attn")],
          [vi("q", TP.FLOAT, [2, 2, 3, 8]), vi("k", TP.FLOAT, [2, 2, "S", 8]),
           vi("v", TP.FLOAT, [2, 2, "S", 8]), vi("n", TP.INT64, [2])],
          [vi("y", TP.FLOAT, [2, 2, 3, 8])], opset=24)
q, k, v = f32(2, 2, 3, 8), f32(2, 2, 5, 8), f32(2, 2, 5, 8)
case(p, "nonpad", "ok", [q, k, v, i64(3, 5)], True)
case(p, "nonpad", "big", [q, k, v, i64(3, 9)], False)
case(p, "nonpad", "neg", [q, k, v, i64(-1, 2)], False)

p = model("range_f", [helper.make_node("Range", ["s", "l", "d"], ["y"], name="rg")],
          [vi("l", TP.FLOAT, [])], [vi("y", TP.FLOAT, ["n"])],
          [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
           numpy_helper.from_array(np.array(0.25, np.float32), "d")])
case(p, "range_f", "ok", [np.array(2.0, np.float32)], True)

vc = numpy_helper.from_array(np.array([1.5], np.float32))
p = model("shape_rt", [helper.make_node("ConstantOfShape", ["s"], ["c"], value=vc, name="cos"),
                       helper.make_node("Expand", ["x", "s"], ["e"], name="expand"),
                       helper.make_node("Add", ["c", "e"], ["y"], name="add")],
          [vi("s", TP.INT64, [3]), vi("x", TP.FLOAT, [1, 1, 4])],
          [vi("y", TP.FLOAT, ["a", "b", "c"])])
xs = np.array([[[1, 2, 3, 4]]], np.float32)
case(p, "shape_rt", "ok", [i64(2, 3, 4), xs], True)
case(p, "shape_rt", "one", [i64(2, 3, 1), xs], True)
case(p, "shape_rt", "bad", [i64(2, 3, 5), xs], False)
case(p, "shape_rt", "neg", [i64(2, -3, 4), xs], False)

p = model("cast_nan", [helper.make_node("Cast", ["x"], ["y"], to=TP.INT32, name="cast")],
          [vi("x", TP.FLOAT, ["n"])], [vi("y", TP.INT32, ["n"])])
case(p, "cast_nan", "ok",
     [np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7], np.float32)], True)
