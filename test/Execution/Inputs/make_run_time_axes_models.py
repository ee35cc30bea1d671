#!/usr/bin/env python3
"""Ops whose axes are a run-time input, their inputs and onnxruntime's
outputs (test/Execution/run-time-axes.test).

usage: make_run_time_axes_models.py OUTDIR
  cumsum.onnx     CumSum(x[2, 3], axis a[])
  reducesum.onnx  ReduceSum(x[2, 3], axes a[1]), keepdims 1
  unsqueeze.onnx  Unsqueeze(x[2, 3], axes a[1])
  squeeze.onnx    Squeeze(x[2, 1], axes a[1])
  squeeze0.onnx   Squeeze(x[n, 3], constant axes [0])
  NAME_<case>_in<k>.npy, NAME_<case>_ref.npy: ok (a = -1, valid) and bad
  (out of range, onnxruntime fails: no ref); squeeze_notone (axes [0] on
  x[2, 1]), squeeze0_ok (n = 1) and squeeze0_notone (n = 2, no ref).
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
F, I64 = TP.FLOAT, TP.INT64


def case(name, op, xshape, ashape, out_dims, bad, **attrs):
    g = helper.make_graph([helper.make_node(op, ["x", "a"], ["y"], name=name, **attrs)],
                          name, [vi("x", F, xshape), vi("a", I64, ashape)],
                          [vi("y", F, out_dims)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.arange(np.prod(xshape), dtype=np.float32).reshape(xshape)
    for tag, a in [("ok", -1), ("bad", bad)]:
        a = np.array(a, np.int64).reshape(ashape)
        np.save(os.path.join(out, "%s_%s_in0.npy" % (name, tag)), x)
        np.save(os.path.join(out, "%s_%s_in1.npy" % (name, tag)), a)
        try:
            (r,) = sess.run(None, {"x": x, "a": a})
        except Exception:
            continue
        np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


case("cumsum", "CumSum", [2, 3], [], [2, 3], 2)
case("reducesum", "ReduceSum", [2, 3], [1], ["p", "q"], 7, keepdims=1)
case("unsqueeze", "Unsqueeze", [2, 3], [1], ["p", "q", "r"], 3)
case("squeeze", "Squeeze", [2, 1], [1], ["p"], -3)

# Squeeze of a dim that is not 1 at run time (onnxruntime fails the run):
# run-time axes naming dim 0 of x[2, 1], and constant axes [0] on x[n, 3].
x = np.arange(2, dtype=np.float32).reshape(2, 1)
np.save(os.path.join(out, "squeeze_notone_in0.npy"), x)
np.save(os.path.join(out, "squeeze_notone_in1.npy"), np.array([0], np.int64))
g = helper.make_graph([helper.make_node("Squeeze", ["x", "a"], ["y"], name="squeeze0")],
                      "squeeze0", [vi("x", F, ["n", 3])], [vi("y", F, [3])],
                      initializer=[onnx.numpy_helper.from_array(np.array([0], np.int64), "a")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
path = os.path.join(out, "squeeze0.onnx")
onnx.save(m, path)
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
for tag, n in [("ok", 1), ("notone", 2)]:
    x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    np.save(os.path.join(out, "squeeze0_%s_in0.npy" % tag), x)
    try:
        (r,) = sess.run(None, {"x": x})
    except Exception:
        continue
    np.save(os.path.join(out, "squeeze0_%s_ref.npy" % tag), r)
