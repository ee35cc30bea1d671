#!/usr/bin/env python3
"""LayerNorm of rows with a large offset, for
test/Execution/layer-norm-offset.test.

usage: make_layer_norm_offset.py OUTDIR
  ln_op.onnx   LayerNormalization-17 over d = 1024 (x [B, 1024])
  ln_pat.onnx  the same written out (ReduceMean, Sub, Mul, ReduceMean, Add,
               Sqrt, Div, Mul, Add), which gatec raises to one layer norm
  x.npy        rows: constant 1e6, constant 1e20, constant -3e7, 1e6 plus
               noise in [0, 64), standard normal
  ln_op_ref.npy   onnxruntime's output of ln_op
  ln_pat_ref.npy  the layer norm in float64 (numpy): onnxruntime runs the
                  written-out ops one by one in f32 and is off by 1 on the
                  constant rows (x − mean is not 0 there)
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
d = 1024
rng = np.random.default_rng(11)
x = np.empty((5, d), np.float32)
x[0], x[1], x[2] = 1e6, 1e20, -3e7
x[3] = 1e6 + rng.random(d).astype(np.float32) * 64
x[4] = rng.standard_normal(d)
np.save(os.path.join(out, "x.npy"), x)
scale = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
bias = (0.5 + 0.1 * rng.standard_normal(d)).astype(np.float32)
inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")]
vi = helper.make_tensor_value_info
io = ([vi("x", TP.FLOAT, ["B", d])], [vi("y", TP.FLOAT, ["B", d])])
op = helper.make_graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"],
                                         axis=-1, epsilon=1e-5)], "ln_op", *io, inits)
n = helper.make_node
pat = helper.make_graph(
    [n("ReduceMean", ["x"], ["mu"], axes=[-1]), n("Sub", ["x", "mu"], ["c"]),
     n("Mul", ["c", "c"], ["c2"]), n("ReduceMean", ["c2"], ["var"], axes=[-1]),
     n("Add", ["var", "eps"], ["ve"]), n("Sqrt", ["ve"], ["sd"]),
     n("Div", ["c", "sd"], ["nrm"]), n("Mul", ["nrm", "s"], ["ns"]),
     n("Add", ["ns", "b"], ["y"])], "ln_pat", *io,
    inits + [numpy_helper.from_array(np.array(1e-5, np.float32), "eps")])
for name, g in [("ln_op", op), ("ln_pat", pat)]:
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
ref = ort.InferenceSession(os.path.join(out, "ln_op.onnx"),
                           providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
np.save(os.path.join(out, "ln_op_ref.npy"), ref)
xd = x.astype(np.float64)
mu = xd.mean(-1, keepdims=True)
exact = (xd - mu) / np.sqrt(((xd - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * scale + bias
assert np.abs(exact - ref).max() < 1e-2  # onnxruntime's op is right
np.save(os.path.join(out, "ln_pat_ref.npy"), exact.astype(np.float32))
