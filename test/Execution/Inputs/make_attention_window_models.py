#!/usr/bin/env python3
"""Attention-25 with sliding windows and nonpad_kv_seqlen over symbolic
batch and sequence dims, its inputs and the ONNX reference's outputs
(onnx.reference; test/Execution/attention-window.test).

usage: make_attention_window_models.py OUTDIR
  win.onnx   Attention(q[b, 2, t, 4], k[b, 1, s, 4], v[b, 1, s, 4],
             nonpad_kv_seqlen n[nb]), is_causal, left_window_size 2: an
             external KV cache, so query i sits at n[b] - t + i.
             Cases: one (b = t = s = 1), long (b = 2, t = 5, s = 9, n = [9, 6]),
             short (t = 4, s = 6, n = [2, 6]: batch 0's first two rows see
             no key and are zeros), batch (n of one element for b = 2: no ref).
  bidi.onnx  Attention(q[b, t, 8], k[b, s, 8], v[b, s, 8], mask[t, s] f32),
             2 heads, left_window_size 1, right_window_size 2, not causal.
             Cases: one (1, 1, 1), long (b = 2, t = s = 7).
  <model>_<case>_in<k>.npy, <model>_<case>_ref.npy
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
F = TP.FLOAT
rng = np.random.default_rng(0)


def save(name, nodes, inputs, outputs, cases):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 25)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    ref = ReferenceEvaluator(m)
    for tag, arrays, ok in cases:
        for k, a in enumerate(arrays):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        if ok:
            (r,) = ref.run(None, {i.name: a for i, a in zip(inputs, arrays)})
            np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


win = helper.make_node("Attention", ["q", "k", "v", "", "", "", "n"], ["y"],
                       name="win", is_causal=1, left_window_size=2)
save("win", [win],
     [vi("q", F, ["b", 2, "t", 4]), vi("k", F, ["b", 1, "s", 4]),
      vi("v", F, ["b", 1, "s", 4]), vi("n", TP.INT64, ["nb"])],
     [vi("y", F, ["b", 2, "t", 4])],
     [("one", [randn(1, 2, 1, 4), randn(1, 1, 1, 4), randn(1, 1, 1, 4),
               np.array([1], np.int64)], True),
      ("long", [randn(2, 2, 5, 4), randn(2, 1, 9, 4), randn(2, 1, 9, 4),
                np.array([9, 6], np.int64)], True),
      ("short", [randn(2, 2, 4, 4), randn(2, 1, 6, 4), randn(2, 1, 6, 4),
                 np.array([2, 6], np.int64)], True),
      ("batch", [randn(2, 2, 4, 4), randn(2, 1, 6, 4), randn(2, 1, 6, 4),
                 np.array([6], np.int64)], False)])

bidi = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"], name="bidi",
                        q_num_heads=2, kv_num_heads=2, left_window_size=1,
                        right_window_size=2)
save("bidi", [bidi],
     [vi("q", F, ["b", "t", 8]), vi("k", F, ["b", "s", 8]), vi("v", F, ["b", "s", 8]),
      vi("mask", F, ["t", "s"])],
     [vi("y", F, ["b", "t", 8])],
     [("one", [randn(1, 1, 8), randn(1, 1, 8), randn(1, 1, 8), randn(1, 1)], True),
      ("long", [randn(2, 7, 8), randn(2, 7, 8), randn(2, 7, 8), randn(7, 7)], True)])
