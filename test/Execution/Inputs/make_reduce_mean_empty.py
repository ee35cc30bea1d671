#!/usr/bin/env python3
"""ReduceMean models reducing over no elements, their inputs and
onnxruntime's outputs (test/Execution/reduce-mean-empty.test). ONNX leaves
the mean of no elements undefined (numpy gives NaN); onnxruntime gives 0,
for floats and integers, and so does gatec.

usage: make_reduce_mean_empty.py OUTDIR
  mean_f32.onnx    x[2, n] f32, axes [1] (constant), keepdims 0
  mean_i64.onnx    x[2, n] i64, the same
  mean_axes.onnx   x[2, n] f32, axes a[1] read at run time, keepdims 1
  mean_static.onnx x[2, 0] i64 (a static empty dim), axes [1]
  NAME_<case>_in<k>.npy, NAME_<case>_ref.npy; cases empty (n = 0) and
  values (n = 3).
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
axes = numpy_helper.from_array(np.array([1], np.int64), "a")


def save(name, t, dims, keep, const_axes):
    inputs = [vi("x", t, dims)] + ([] if const_axes else [vi("a", TP.INT64, [1])])
    g = helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "a"], ["y"], name="mean", keepdims=keep)],
        name, inputs, [vi("y", t, [2, 1] if keep else [2])],
        initializer=[axes] if const_axes else [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    return path


def case(path, name, tag, *inputs):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, (v, a) in enumerate(zip(sess.get_inputs(), inputs)):
        np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        feeds[v.name] = a
    (r,) = sess.run(None, feeds)
    np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


vals = np.array([[1, 2, 4], [-1, -2, -4]])
p = save("mean_f32", TP.FLOAT, [2, "n"], 0, True)
case(p, "mean_f32", "empty", np.zeros((2, 0), np.float32))
case(p, "mean_f32", "values", vals.astype(np.float32))
p = save("mean_i64", TP.INT64, [2, "n"], 0, True)
case(p, "mean_i64", "empty", np.zeros((2, 0), np.int64))
case(p, "mean_i64", "values", vals.astype(np.int64))
p = save("mean_axes", TP.FLOAT, [2, "n"], 1, False)
case(p, "mean_axes", "empty", np.zeros((2, 0), np.float32), np.array([1], np.int64))
case(p, "mean_axes", "values", vals.astype(np.float32), np.array([1], np.int64))
p = save("mean_static", TP.INT64, [2, 0], 0, True)
case(p, "mean_static", "empty", np.zeros((2, 0), np.int64))
