#!/usr/bin/env python3
"""ONNX SwiGLU-28 over symbolic batch and sequence dims, its inputs and the
ONNX reference's outputs (onnx.reference; test/Execution/swiglu.test).

usage: make_swiglu_models.py OUTDIR
  ffn.onnx    SwiGLU(x·W, x·V) · U, x[b, s, 8], W and V [8, 6], U [6, 8]
              (Llama's feed-forward layer). Cases: one (1, 1), long (2, 33).
  alpha.onnx  SwiGLU(a, c) with alpha 1.702 (GPT-OSS), a and c [b, s, 5].
              Cases: one (1, 1, 5), long (2, 9, 5), shapes (a [2, 9, 5],
              c [2, 1, 5]: no broadcasting, no ref).
  <model>_<case>_in<k>.npy, <model>_<case>_ref.npy
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
F = TP.FLOAT
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(name, nodes, inputs, outputs, inits, cases):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    ref = ReferenceEvaluator(m)
    for tag, arrays, ok in cases:
        for k, a in enumerate(arrays):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        if ok:
            (r,) = ref.run(None, {i.name: a for i, a in zip(inputs, arrays)})
            np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


inits = [numpy_helper.from_array(randn(8, 6) * 0.5, "W"),
         numpy_helper.from_array(randn(8, 6) * 0.5, "V"),
         numpy_helper.from_array(randn(6, 8) * 0.5, "U")]
save("ffn",
     [helper.make_node("MatMul", ["x", "W"], ["a"], name="gate_proj"),
      helper.make_node("MatMul", ["x", "V"], ["c"], name="up_proj"),
      helper.make_node("SwiGLU", ["a", "c"], ["h"], name="act"),
      helper.make_node("MatMul", ["h", "U"], ["y"], name="down_proj")],
     [vi("x", F, ["b", "s", 8])], [vi("y", F, ["b", "s", 8])], inits,
     [("one", [randn(1, 1, 8)], True), ("long", [randn(2, 33, 8)], True)])
save("alpha", [helper.make_node("SwiGLU", ["a", "c"], ["y"], name="act", alpha=1.702)],
     [vi("a", F, ["b", "s", 5]), vi("c", F, ["cb", "cs", 5])],
     [vi("y", F, ["b", "s", 5])], [],
     [("one", [randn(1, 1, 5), randn(1, 1, 5)], True),
      ("long", [randn(2, 9, 5) * 3, randn(2, 9, 5)], True),
      ("shapes", [randn(2, 9, 5), randn(2, 1, 5)], False)])
