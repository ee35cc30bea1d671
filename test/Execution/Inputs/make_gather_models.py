#!/usr/bin/env python3
"""Gather models whose indices may be out of range, their inputs and
onnxruntime's outputs (test/Execution/gather-indices.test).

usage: make_gather_models.py OUTDIR
  embed.onnx       w[5, 4] (an initializer) gathered with token ids i[b, t]
  scalar.onnx      x[n] gathered with a scalar index i[] (a shape element)
  const_dyn.onnx   x[2, m] gathered with the constant indices [2, -1] on axis
                   1 (their extremes checked once against m at run time)
  const_bad.onnx   x[2, 3] gathered with the constant index 3 on axis 1
  NAME_<case>_in<k>.npy (inputs in graph order), NAME_<case>_ref.npy where
  onnxruntime returns values; where it fails, no reference (gatec's run
  must fail too).
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


def save(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
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
        (r,) = sess.run(None, feeds)
    except Exception:  # onnxruntime: "indices element out of data bounds"
        return
    np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


ids = lambda *v: np.array(v, np.int64).reshape(1, -1)
save("embed", [helper.make_node("Gather", ["w", "i"], ["y"], name="embed", axis=0)],
     [vi("i", TP.INT64, ["b", "t"])], [vi("y", TP.FLOAT, ["b", "t", 4])],
     [numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(5, 4), "w")])
case("embed", "ok", ids(0, 4, -1, -5, 2))
case("embed", "high", ids(0, 5, 1))
case("embed", "low", ids(0, -6, 1))
case("embed", "huge", ids(1000000000, 1))

save("scalar", [helper.make_node("Gather", ["x", "i"], ["y"], name="pick", axis=0)],
     [vi("x", TP.INT64, ["n"]), vi("i", TP.INT64, [])], [vi("y", TP.INT64, [])])
case("scalar", "ok", np.array([1, 2, 3], np.int64), np.array(-3, np.int64))
case("scalar", "high", np.array([1, 2, 3], np.int64), np.array(3, np.int64))

save("const_dyn", [helper.make_node("Gather", ["x", "c"], ["y"], name="cols", axis=1)],
     [vi("x", TP.FLOAT, [2, "m"])], [vi("y", TP.FLOAT, [2, 2])],
     [numpy_helper.from_array(np.array([2, -1], np.int64), "c")])
case("const_dyn", "ok", np.arange(6, dtype=np.float32).reshape(2, 3))
case("const_dyn", "short", np.arange(4, dtype=np.float32).reshape(2, 2))

save("const_bad", [helper.make_node("Gather", ["x", "c"], ["y"], name="cols", axis=1)],
     [vi("x", TP.FLOAT, [2, 3])], [vi("y", TP.FLOAT, [2])],
     [numpy_helper.from_array(np.array(3, np.int64), "c")])
