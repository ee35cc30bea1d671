#!/usr/bin/env python3
"""Inputs and onnxruntime's outputs at sequence length 0 and 1, for
test/Execution/seq-len-zero.test.

usage: make_seq_len_zero.py MODELS OUTDIR
  reshape.onnx  x[b, t, 32] reshaped to a run-time shape s[4] (the Reshape
                of a gated attention's heads, its shape computed from Shape)
  reshape_<case>_in<k>.npy, reshape_<case>_ref.npy:
    empty     x[2, 0, 32], s = [2, 0, 4, 8]   -> [2, 0, 4, 8]
    values    x[2, 3, 32], s = [2, 3, -1, 8]  -> [2, 3, 4, 8]
    minusone  x[2, 0, 32], s = [2, 0, -1, 8]  (onnxruntime fails: no ref)
  <model>_<case>_in<k>.npy, <model>_<case>_ref<k>.npy for the committed
  models MODELS/<model>.onnx below, x of batch 2 (random normal), cases
  t0 (sequence 0) and t1 (sequence 1); flamingo_xattn_dyn also s0 (3
  tokens attending over 0 media tokens).
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper

models, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
ort.set_default_logger_severity(4)  # the failing run is expected
rng = np.random.default_rng(0)


def run(path, name, tag, inputs):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for k, (v, a) in enumerate(zip(sess.get_inputs(), inputs)):
        np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        feeds[v.name] = a
    try:
        rs = sess.run(None, feeds)
    except Exception:
        return
    for k, r in enumerate(rs):
        np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, k)), r)


vi = helper.make_tensor_value_info
g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="heads")], "g",
                      [vi("x", TP.FLOAT, ["b", "t", 32]), vi("s", TP.INT64, [4])],
                      [vi("y", TP.FLOAT, ["b", "t", "h", 8])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
path = os.path.join(out, "reshape.onnx")
onnx.save(m, path)
x = lambda *s: rng.standard_normal(s).astype(np.float32)
i64 = lambda *v: np.array(v, np.int64)
run(path, "reshape", "empty", [x(2, 0, 32), i64(2, 0, 4, 8)])
run(path, "reshape", "values", [x(2, 3, 32), i64(2, 3, -1, 8)])
run(path, "reshape", "minusone", [x(2, 0, 32), i64(2, 0, -1, 8)])

for name, d in [("gate_g2_value_dyn", 32), ("qwen3next_gated_attn_dyn", 64),
                ("flamingo_xattn_dyn", 32)]:
    path = os.path.join(models, name + ".onnx")
    media = [x(2, 3, 32)] if name.startswith("flamingo") else []
    run(path, name, "t0", [x(2, 0, d)] + media)
    run(path, name, "t1", [x(2, 1, d)] + media)
    if media:
        run(path, name, "s0", [x(2, 3, d), x(2, 0, 32)])
