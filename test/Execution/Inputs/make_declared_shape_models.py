#!/usr/bin/env python3
"""Graph outputs declared static over dynamic inputs, for
test/Execution/declared-output-shapes.test.

usage: make_declared_shape_models.py OUTDIR
  static_out.onnx  x[B, 4] → Relu → MatMul(w[4, 3]) → Add → y, y declared
                   [2, 3] (what torch.onnx.export writes when dynamic_axes
                   names only the inputs); onnxruntime returns y[B, 3] (with
                   a warning), and so must gatec
  neg_dim.onnx     x declared [-1, 4] (a negative dim_value: dynamic, as in
                   onnxruntime) → Sigmoid → y declared [-1, 4]
  <model>_b<N>_in0.npy, <model>_b<N>_ref0.npy: inputs at batch N = 1, 2, 5
  and onnxruntime's outputs.
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
ort.set_default_logger_severity(3)  # onnxruntime warns about the outputs
rng = np.random.default_rng(5)
vi = helper.make_tensor_value_info

w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
bias = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "bias")
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["r"], name="relu"),
     helper.make_node("MatMul", ["r", "w"], ["m"], name="proj"),
     helper.make_node("Add", ["m", "bias"], ["y"], name="bias_add")],
    "static_out", [vi("x", TP.FLOAT, ["B", 4])], [vi("y", TP.FLOAT, [2, 3])],
    [w, bias])
models = {"static_out": helper.make_model(
    g, opset_imports=[helper.make_opsetid("", 17)])}

g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"], name="sig")],
                      "neg_dim", [vi("x", TP.FLOAT, [1, 4])],
                      [vi("y", TP.FLOAT, [1, 4])])
g.input[0].type.tensor_type.shape.dim[0].dim_value = -1
g.output[0].type.tensor_type.shape.dim[0].dim_value = -1
models["neg_dim"] = helper.make_model(
    g, opset_imports=[helper.make_opsetid("", 17)])

for name, m in models.items():
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for n in (1, 2, 5):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        assert y.shape[0] == n
        np.save(os.path.join(out, f"{name}_b{n}_in0.npy"), x)
        np.save(os.path.join(out, f"{name}_b{n}_ref0.npy"), y)
