#!/usr/bin/env python3
"""A Reshape to a shape read at run time, its inputs and onnxruntime's
outputs (test/Execution/reshape-sizes.test).

usage: make_reshape_models.py OUTDIR
  reshape.onnx  x[n] reshaped to s[2] (both read at run time)
  reshape_<case>_in<k>.npy, reshape_<case>_ref.npy where onnxruntime
  returns values:
    ok        x[6], s = [3, -1]   -> [3, 2]
    count     x[6], s = [4, 2]    (8 elements for 6: no ref)
    twominus  x[6], s = [-1, -1]  (no ref)
    negative  x[6], s = [-2, -3]  (no ref)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
ort.set_default_logger_severity(4)  # the failing runs are expected
vi = helper.make_tensor_value_info
g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="rows")], "g",
                      [vi("x", TP.FLOAT, ["n"]), vi("s", TP.INT64, [2])],
                      [vi("y", TP.FLOAT, ["a", "b"])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
path = os.path.join(out, "reshape.onnx")
onnx.save(m, path)
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
x = np.arange(6, dtype=np.float32)
for tag, s in [("ok", [3, -1]), ("count", [4, 2]), ("twominus", [-1, -1]),
               ("negative", [-2, -3])]:
    s = np.array(s, np.int64)
    np.save(os.path.join(out, "reshape_%s_in0.npy" % tag), x)
    np.save(os.path.join(out, "reshape_%s_in1.npy" % tag), s)
    try:
        (r,) = sess.run(None, {"x": x, "s": s})
    except Exception:
        continue
    np.save(os.path.join(out, "reshape_%s_ref.npy" % tag), r)
