#!/usr/bin/env python3
"""Clip with an absent bound, its inputs and onnxruntime's outputs
(test/Execution/clip-defaults.test). The spec's default bounds are
numeric_limits<T>::lowest() and max(): ±inf become ∓FLT_MAX-style finite
values, NaN stays NaN.

usage: make_clip_models.py OUTDIR
  clip_max.onnx  Clip(x, , 7)   x f32 [n]   (no min)
  clip_min.onnx  Clip(x, -7, )  x f32 [n]   (no max)
  clip_none16.onnx  Clip(x)     x f16 [n]   (neither: ±inf to ±65504)
  Case: edge (-inf, inf, NaN, 1, 8, -8, ±3.4e38)
  <model>_edge_in0.npy, <model>_edge_ref0.npy
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
vi = helper.make_tensor_value_info


def save(name, inputs, elem, x):
    node = helper.make_node("Clip", ["x"] + inputs, ["y"])
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("lo", -7.0), ("hi", 7.0)) if n in inputs]
    g = helper.make_graph([node], name, [vi("x", elem, ["n"])], [vi("y", elem, ["n"])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.save(os.path.join(out, name + "_edge_in0.npy"), x)
    np.save(os.path.join(out, name + "_edge_ref0.npy"), sess.run(None, {"x": x})[0])


edge = np.array([-np.inf, np.inf, np.nan, 1, 8, -8, 3.4e38, -3.4e38], np.float32)
save("clip_max", ["", "hi"], TP.FLOAT, edge)
save("clip_min", ["lo"], TP.FLOAT, edge)
save("clip_none16", [], TP.FLOAT16, np.array([-np.inf, np.inf, np.nan, 1, -60000],
                                             np.float16))
