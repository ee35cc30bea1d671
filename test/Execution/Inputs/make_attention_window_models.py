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
  cwin.onnx  Attention(q[b, 4, t, 8], k, v[b, 2, t, 8]), is_causal,
             left_window_size 3, right_window_size 0 (raised).
  softcap.onnx  Gemma2's softcapped attention in plain ops (c = 1.5),
             causal from iotas (raised: gated.attention {causal, softcap}).
  sinks.onnx  GPT-OSS's attention sinks in plain ops, causal (raised:
             gated.attention sinks(...)).
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
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
F = TP.FLOAT
rng = np.random.default_rng(0)


def save(name, nodes, inputs, outputs, cases, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
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

# A causal sliding window without cache: raised to gated.attention with
# left_window (the flash kernel skips the key blocks before the window).
# Long: 70 queries and keys, more than one key block of the CPU tiling.
cwin = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="cwin",
                        is_causal=1, left_window_size=3, right_window_size=0)
save("cwin", [cwin],
     [vi("q", F, ["b", 4, "t", 8]), vi("k", F, ["b", 2, "t", 8]),
      vi("v", F, ["b", 2, "t", 8])],
     [vi("y", F, ["b", 4, "t", 8])],
     [("one", [randn(1, 4, 1, 8), randn(1, 2, 1, 8), randn(1, 2, 1, 8)], True),
      ("long", [randn(2, 4, 70, 8), randn(2, 2, 70, 8), randn(2, 2, 70, 8)], True)])

# Gemma2's attention logit softcapping, as its eager attention is exported:
# softmax(c·tanh(QKᵀ·s / c) + mask) V with c = 1.5 (small, so that the cap
# changes the result), a causal additive mask built from iotas over T.
# Raised to gated.attention {causal, softcap}.
T_ = "t"
# transformers' causal mask over the scores' T (= S): key iota <= query
# iota, as an additive mask of 0 and finfo.min ("mask" [1, 1, T, T]).
causal_mask_nodes = [
    helper.make_node("Shape", ["q"], ["qshape"]),
    helper.make_node("Gather", ["qshape", "two"], ["tlen"], axis=0),
    helper.make_node("Range", ["zero", "tlen", "one"], ["iota"]),
    helper.make_node("Unsqueeze", ["iota", "ax_q"], ["qi"]),
    helper.make_node("Unsqueeze", ["iota", "ax_k"], ["ki"]),
    helper.make_node("LessOrEqual", ["ki", "qi"], ["attends"]),
    helper.make_node("Where", ["attends", "fzero", "fmin"], ["mask"]),
]
cap_nodes = [
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", ["q", "kt"], ["qk"]),
    helper.make_node("Mul", ["qk", "scale"], ["s"]),
    helper.make_node("Div", ["s", "cap"], ["sd"]),
    helper.make_node("Tanh", ["sd"], ["th"]),
    helper.make_node("Mul", ["th", "cap"], ["sc"]),
    *causal_mask_nodes,
    helper.make_node("Add", ["sc", "mask"], ["sm"]),
    helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
    helper.make_node("MatMul", ["p", "v"], ["y"], name="softcap_attention")]
cap_inits = [numpy_helper.from_array(np.array(8 ** -0.5, np.float32), "scale"),
             numpy_helper.from_array(np.array(1.5, np.float32), "cap"),
             numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array([0, 1, 3], np.int64), "ax_q"),
             numpy_helper.from_array(np.array([0, 1, 2], np.int64), "ax_k"),
             numpy_helper.from_array(np.array(0, np.float32), "fzero"),
             numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "fmin")]
save("softcap", cap_nodes,
     [vi("q", F, ["b", 2, T_, 8]), vi("k", F, ["b", 2, T_, 8]), vi("v", F, ["b", 2, T_, 8])],
     [vi("y", F, ["b", 2, T_, 8])],
     [("one", [randn(1, 2, 1, 8), randn(1, 2, 1, 8), randn(1, 2, 1, 8)], True),
      ("long", [3 * randn(2, 2, 40, 8), 3 * randn(2, 2, 40, 8), randn(2, 2, 40, 8)], True)],
     inits=cap_inits)

# GPT-OSS's attention sinks as its eager attention is exported: the scores
# (scaled, plus a causal additive mask) concatenated with a per-head logit
# broadcast to [B, H, T, 1], the row max subtracted, softmax, the sink column
# sliced off, times V. Raised to gated.attention with sinks (the flash
# kernel starts each row at the sink's logit).
sink_nodes = [
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", ["q", "kt"], ["qk"]),
    helper.make_node("Mul", ["qk", "scale"], ["s"]),
    *causal_mask_nodes,
    helper.make_node("Add", ["s", "mask"], ["sm"]),
    helper.make_node("Slice", ["qshape", "zero1", "one1"], ["bdim"]),
    helper.make_node("Unsqueeze", ["tlen", "zero1"], ["tdim"]),
    helper.make_node("Concat", ["bdim", "one1", "tdim", "one1"], ["sink_shape"], axis=0),
    helper.make_node("Expand", ["sinks", "sink_shape"], ["sink_b"]),
    helper.make_node("Concat", ["sm", "sink_b"], ["cat"], axis=-1),
    helper.make_node("ReduceMax", ["cat", "last"], ["mx"], keepdims=1),
    helper.make_node("Sub", ["cat", "mx"], ["shift"]),
    helper.make_node("Softmax", ["shift"], ["p_all"], axis=-1),
    helper.make_node("Slice", ["p_all", "zero1", "minus1", "last"], ["p"]),
    helper.make_node("MatMul", ["p", "v"], ["y"], name="sink_attention")]
sink_inits = cap_inits + [
    numpy_helper.from_array(np.array([[[[1.5]], [[-0.5]]]], np.float32), "sinks"),
    numpy_helper.from_array(np.array([0], np.int64), "zero1"),
    numpy_helper.from_array(np.array([1], np.int64), "one1"),
    numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
    numpy_helper.from_array(np.array([-1], np.int64), "last")]
save("sinks", sink_nodes,
     [vi("q", F, ["b", 2, T_, 8]), vi("k", F, ["b", 2, T_, 8]), vi("v", F, ["b", 2, T_, 8])],
     [vi("y", F, ["b", 2, T_, 8])],
     [("one", [randn(1, 2, 1, 8), randn(1, 2, 1, 8), randn(1, 2, 1, 8)], True),
      ("long", [randn(2, 2, 40, 8), randn(2, 2, 40, 8), randn(2, 2, 40, 8)], True)],
     inits=[i for i in sink_inits if i.name not in ("cap",)])
