#!/usr/bin/env python3
"""Slice, Split and Range models whose run-time operands may be invalid,
their inputs and onnxruntime's outputs
(test/Execution/slice-split-range-errors.test).

usage: make_slice_split_range_models.py OUTDIR
  slice.onnx        x[6] sliced with run-time starts, ends, axes, steps [1]
  slice_step0.onnx  x[6] sliced with the constant step 0
  split.onnx        x[6] split by run-time sizes s[2]
  split_const.onnx  x[d] split by the constant sizes [2, 3]
  split_equal.onnx  x[d] split in 4 (opset 18 num_outputs: ceil(d / 4) each)
  range_i64.onnx, range_f32.onnx   Range of run-time scalars
  range_delta0.onnx                Range(s, l, 0) with a constant delta
  NAME_<case>_in<k>.npy (inputs in graph order), NAME_<case>_ref<k>.npy
  where onnxruntime returns values; where it fails, no reference.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

out = sys.argv[1]
ort.set_default_logger_severity(4)  # the failing runs are expected
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
F, I64 = TP.FLOAT, TP.INT64


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))


def case(name, tag, *inputs):
    path = os.path.join(out, name + ".onnx")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, (v, a) in enumerate(zip(sess.get_inputs(), inputs)):
        np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        feeds[v.name] = a
    try:
        rs = sess.run(None, feeds)
    except Exception:
        return
    for k, r in enumerate(rs):
        np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, k)), r)


i64 = lambda *v: np.array(v, np.int64)
x6 = np.arange(6, dtype=np.float32)

save("slice", [helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name="cut")],
     [vi("x", F, [6])] + [vi(n, I64, [1]) for n in "seap"], [vi("y", F, ["m"])])
case("slice", "ok", x6, i64(5), i64(0), i64(-1), i64(-2))
case("slice", "step0", x6, i64(0), i64(6), i64(0), i64(0))
case("slice", "axis", x6, i64(0), i64(6), i64(1), i64(1))
save("slice_step0", [helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name="cut")],
     [vi("x", F, [6])], [vi("y", F, ["m"])],
     [numpy_helper.from_array(i64(v), n) for n, v in zip("seap", [0, 6, 0, 0])])

save("split", [helper.make_node("Split", ["x", "s"], ["y0", "y1"], name="parts", axis=0)],
     [vi("x", F, [6]), vi("s", I64, [2])], [vi("y0", F, ["p"]), vi("y1", F, ["q"])])
case("split", "ok", x6, i64(2, 4))
case("split", "long", x6, i64(2, 5))
case("split", "negative", x6, i64(7, -1))
save("split_const", [helper.make_node("Split", ["x", "s"], ["y0", "y1"], name="parts", axis=0)],
     [vi("x", F, ["d"])], [vi("y0", F, [2]), vi("y1", F, [3])],
     [numpy_helper.from_array(i64(2, 3), "s")])
case("split_const", "ok", np.arange(5, dtype=np.float32))
case("split_const", "long", x6)
save("split_equal", [helper.make_node("Split", ["x"], ["y0", "y1", "y2", "y3"], name="parts",
                                      axis=0, num_outputs=4)],
     [vi("x", F, ["d"])], [vi("y%d" % i, F, ["p%d" % i]) for i in range(4)], opset=18)
case("split_equal", "ok", np.arange(7, dtype=np.float32))   # 2 2 2 1
case("split_equal", "short", np.arange(3, dtype=np.float32))  # 1 1 1 0
case("split_equal", "negative", np.arange(5, dtype=np.float32))  # 2 2 2 -1

for name, t, dt in [("range_i64", I64, np.int64), ("range_f32", F, np.float32)]:
    save(name, [helper.make_node("Range", ["s", "l", "d"], ["y"], name="positions")],
         [vi(n, t, []) for n in "sld"], [vi("y", t, ["n"])])
    s = lambda *v: [np.array(x, dt) for x in v]
    case(name, "ok", *s(1, 2, 0.25) if dt == np.float32 else s(10, -3, -4))
    case(name, "delta0", *s(0, 5, 0))
    case(name, "huge", *s(0, 1e30 if dt == np.float32 else 2 ** 62, 1))
lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
case("range_i64", "extreme", np.array(hi), np.array(lo), np.array(lo))  # [hi, -1]
case("range_f32", "nan", *[np.array(v, np.float32) for v in (0, np.nan, 1)])
save("range_delta0", [helper.make_node("Range", ["s", "l", "d"], ["y"], name="positions")],
     [vi("s", I64, []), vi("l", I64, [])], [vi("y", I64, ["n"])],
     [numpy_helper.from_array(np.array(0, np.int64), "d")])
