#!/usr/bin/env python3
"""RotaryEmbedding-23 with position_ids read at run time, its inputs and
onnxruntime's outputs (test/Execution/rotary-positions.test).

usage: make_rotary_models.py OUTDIR
  rope.onnx  RotaryEmbedding(x[b, 2, t, 4], cos[m, 2], sin[m, 2],
             position_ids p[pb, pt])
  rope_<case>_in<k>.npy, rope_<case>_ref.npy where onnxruntime returns
  values: ok (b = 2, t = 3, m = 5, p in range); high (p = 7), negative
  (p = -1), batch (p of [1, 3]): no ref.
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
g = helper.make_graph(
    [helper.make_node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"], name="rope")], "g",
    [vi("x", F, ["b", 2, "t", 4]), vi("c", F, ["m", 2]), vi("s", F, ["m", 2]),
     vi("p", TP.INT64, ["pb", "pt"])], [vi("y", F, ["b", 2, "t", 4])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
onnx.checker.check_model(m)
path = os.path.join(out, "rope.onnx")
onnx.save(m, path)
sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 2, 3, 4)).astype(np.float32)
ang = np.arange(5)[:, None] * np.array([1.0, 0.1])[None, :]
c, s = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
for tag, p in [("ok", [[0, 1, 2], [4, 3, 0]]), ("high", [[0, 1, 7], [0, 1, 2]]),
               ("negative", [[0, 1, -1], [0, 1, 2]]), ("batch", [[0, 1, 2]])]:
    p = np.array(p, np.int64)
    for k, a in enumerate([x, c, s, p]):
        np.save(os.path.join(out, "rope_%s_in%d.npy" % (tag, k)), a)
    try:
        (r,) = sess.run(None, {"x": x, "c": c, "s": s, "p": p})
    except Exception:
        continue
    np.save(os.path.join(out, "rope_%s_ref.npy" % tag), r)
