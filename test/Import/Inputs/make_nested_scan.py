#!/usr/bin/env python3
"""A Scan whose body holds another Scan that refers to the outer scope: a
value of the outer body (w) and a graph input (gin). Writes the model, its
inputs and onnxruntime's outputs (test/Import/nested-scan.test).

usage: make_nested_scan.py OUTDIR
  nested.onnx        the model; init.npy, seq.npy, gin.npy; ref_final.npy,
                     ref_all.npy (onnxruntime)
  nested_bad.onnx    gin is [3]: the nested body's Add of a [2] value and gin
                     is a shape error inside the nested body
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


def vi(n, s):
    return helper.make_tensor_value_info(n, TP.FLOAT, list(s))


def build(gin_dim):
    inner = helper.make_graph(
        [helper.make_node("Add", ["t", "e"], ["t1"], name="in_add"),
         helper.make_node("Mul", ["t1", "w"], ["t_out"], name="in_mul_w"),
         helper.make_node("Add", ["t_out", "gin"], ["e_out"], name="in_add_g")],
        "inner", [vi("t", [2]), vi("e", [2])],
        [vi("t_out", [2]), vi("e_out", [2])])
    outer = helper.make_graph(
        [helper.make_node("Mul", ["s", "half"], ["w"], name="out_w"),
         helper.make_node("Scan", ["s", "row"], ["s_in", "rows"],
                          name="inner_scan", num_scan_inputs=1, body=inner),
         helper.make_node("Add", ["s_in", "gin"], ["s_out"], name="out_add")],
        "outer", [vi("s", [2]), vi("row", [3, 2])],
        [vi("s_out", [2]), vi("rows", [3, 2])])
    scan = helper.make_node("Scan", ["init", "seq"], ["final", "all"],
                            name="outer_scan", num_scan_inputs=1, body=outer)
    half = numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "half")
    g = helper.make_graph(
        [scan], "g", [vi("init", [2]), vi("seq", [4, 3, 2]), vi("gin", [gin_dim])],
        [vi("final", [2]), vi("all", [4, 3, 2])], initializer=[half])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


m = build(2)
onnx.checker.check_model(m)
onnx.save(m, os.path.join(out, "nested.onnx"))
onnx.save(build(3), os.path.join(out, "nested_bad.onnx"))

rng = np.random.default_rng(0)
feeds = {"init": rng.standard_normal(2).astype(np.float32),
         "seq": rng.standard_normal((4, 3, 2)).astype(np.float32),
         "gin": rng.standard_normal(2).astype(np.float32)}
for k, v in feeds.items():
    np.save(os.path.join(out, k + ".npy"), v)
sess = ort.InferenceSession(os.path.join(out, "nested.onnx"),
                            providers=["CPUExecutionProvider"])
final, allv = sess.run(None, feeds)
np.save(os.path.join(out, "ref_final.npy"), final)
np.save(os.path.join(out, "ref_all.npy"), allv)
