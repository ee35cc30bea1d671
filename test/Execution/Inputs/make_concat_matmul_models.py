#!/usr/bin/env python3
"""Concat, MatMul and Gemm models whose run-time dims may not agree, their
inputs and onnxruntime's outputs (test/Execution/concat-matmul-sizes.test).

usage: make_concat_matmul_models.py OUTDIR
  concat.onnx  Concat(a[n, 2], b[m, 3]) on axis 1: n and m must agree
  matmul.onnx  a[2, k] @ b[j, 3]: k and j must agree
  gemm.onnx    Gemm(a[2, k], b[3, j], transB): the same
  NAME_<case>_in<k>.npy, NAME_<case>_ref.npy where onnxruntime returns
  values (case ok); where it fails (case bad), no reference.
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
F = TP.FLOAT
rng = np.random.default_rng(0)


def save(name, node, inputs, out_dims):
    g = helper.make_graph([node], name, [vi(n, F, d) for n, d in inputs],
                          [vi("y", F, out_dims)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    return path


def case(path, name, tag, *shapes):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, (v, s) in enumerate(zip(sess.get_inputs(), shapes)):
        a = rng.standard_normal(s).astype(np.float32)
        np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        feeds[v.name] = a
    try:
        (r,) = sess.run(None, feeds)
    except Exception:
        return
    np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


p = save("concat", helper.make_node("Concat", ["a", "b"], ["y"], name="cat", axis=1),
         [("a", ["n", 2]), ("b", ["m", 3])], ["n", 5])
case(p, "concat", "ok", (2, 2), (2, 3))
case(p, "concat", "bad", (1, 2), (4, 3))
p = save("matmul", helper.make_node("MatMul", ["a", "b"], ["y"], name="mm"),
         [("a", [2, "k"]), ("b", ["j", 3])], [2, 3])
case(p, "matmul", "ok", (2, 4), (4, 3))
case(p, "matmul", "bad", (2, 4), (2, 3))
p = save("gemm", helper.make_node("Gemm", ["a", "b"], ["y"], name="gemm", transB=1),
         [("a", [2, "k"]), ("b", [3, "j"])], [2, 3])
case(p, "gemm", "ok", (2, 4), (3, 4))
case(p, "gemm", "bad", (2, 4), (3, 2))
