#!/usr/bin/env python3
"""ConstantOfShape, Expand and Tile models whose sizes are read at run time,
feeding a ReduceSum (so that the sized tensor is a buffer inside the
model), for test/Execution/negative-sizes.test.

usage: make_negative_size_models.py OUTDIR
  cos.onnx     y = ReduceSum(ConstantOfShape(s, 1.5)), s[2]
  expand.onnx  y = ReduceSum(Expand(x[1, 1], s)), s[2]
  tile.onnx    y = ReduceSum(Tile(x[2, 2], s)), s[2]
  NAME_<case>_in<k>.npy, NAME_<case>_ref.npy where onnxruntime returns
  values: ok (s = [2, 3]); neg (s = [-2, -3]: no ref).
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
ort.set_default_logger_severity(4)  # the failing runs are expected
vi = helper.make_tensor_value_info
F = TP.FLOAT


def save(name, node, inputs, inputs_np):
    g = helper.make_graph(
        [node, helper.make_node("ReduceSum", ["e"], ["y"], name="sum", keepdims=0)],
        name, inputs + [vi("s", TP.INT64, [2])], [vi("y", F, [])],
        value_info=[vi("e", F, ["a", "b"])])  # the rank, as exporters write it
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for tag, s in [("ok", [2, 3]), ("neg", [-2, -3])]:
        feeds = dict(inputs_np, s=np.array(s, np.int64))
        for k, v in enumerate(sess.get_inputs()):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), feeds[v.name])
        try:
            (r,) = sess.run(None, feeds)
        except Exception:
            continue
        np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


save("cos", helper.make_node("ConstantOfShape", ["s"], ["e"], name="fill",
                             value=numpy_helper.from_array(np.array([1.5], np.float32))),
     [], {})
save("expand", helper.make_node("Expand", ["x", "s"], ["e"], name="widen"),
     [vi("x", F, [1, 1])], {"x": np.full((1, 1), 2.0, np.float32)})
save("tile", helper.make_node("Tile", ["x", "s"], ["e"], name="repeat"),
     [vi("x", F, [2, 2])], {"x": np.arange(4, dtype=np.float32).reshape(2, 2)})
