#!/usr/bin/env python3
"""MoE routers as the exporters write them, over a symbolic token dim, their
inputs and onnxruntime's outputs (test/Execution/moe-router.test).

usage: make_moe_router_models.py OUTDIR
  qwen.onnx    Gemm(x, W_r, transB = 1) [n, 8] -> Softmax -> TopK(2) ->
               Div(values, ReduceSum(values, -1, keepdims)) (Qwen3-Next,
               norm_topk_prob); outputs weights [n, 2], indices [n, 2].
  switch.onnx  the same without the renormalisation, TopK(3) of 6 experts
               over x [b, s, 16] (MatMul + bias, Softmax axis 2).
  gptoss.onnx  Gemm with a bias -> TopK(2) -> Softmax over the 2 values.
  half.onnx    f16 x and W_r, the softmax in f32 (Cast), TopK(2) of 4.
  moe.onnx     a whole MoE layer: the qwen router, then the selected
               experts' x·V_e (Gather of V [8, 16, 4] by the indices,
               MatMul) weighted and summed over the k experts.
  Cases: one (1 token), long (many tokens); for qwen, gptoss and moe also
  ties (some rows of x zero: all logits equal, or equal to the bias, so
  the lower expert index comes first); for qwen and moe also empty (no
  tokens).
  <model>_<case>_in0.npy, <model>_<case>_ref<j>.npy (output j)
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
F, H, I64 = TP.FLOAT, TP.FLOAT16, TP.INT64
rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def i64(name, *v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def save(name, nodes, inputs, outputs, inits, cases):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for tag, x in cases:
        np.save(os.path.join(out, "%s_%s_in0.npy" % (name, tag)), x)
        for j, r in enumerate(sess.run(None, {inputs[0].name: x})):
            np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, j)), r)


def with_zero_rows(x, rows):
    x = x.copy()
    x[list(rows)] = 0
    return x


router = [
    helper.make_node("Gemm", ["x", "W_r"], ["logits"], name="gate", transB=1),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    helper.make_node("TopK", ["probs", "k"], ["top", "idx"], name="topk", axis=-1),
    helper.make_node("ReduceSum", ["top", "axes"], ["sum"], name="sum", keepdims=1),
    helper.make_node("Div", ["top", "sum"], ["w"], name="norm"),
]
router_inits = [numpy_helper.from_array(randn(8, 16), "W_r"), i64("k", 2), i64("axes", -1)]
save("qwen", router, [vi("x", F, ["n", 16])],
     [vi("w", F, ["n", 2]), vi("idx", I64, ["n", 2])], router_inits,
     [("one", randn(1, 16)), ("long", randn(1500, 16)),
      ("ties", with_zero_rows(randn(5, 16), [0, 3])), ("empty", randn(0, 16))])

save("switch",
     [helper.make_node("MatMul", ["x", "W_r"], ["xw"], name="gate"),
      helper.make_node("Add", ["xw", "b_r"], ["logits"], name="gate_bias"),
      helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=2),
      helper.make_node("TopK", ["probs", "k"], ["w", "idx"], name="topk", axis=2)],
     [vi("x", F, ["b", "s", 16])],
     [vi("w", F, ["b", "s", 3]), vi("idx", I64, ["b", "s", 3])],
     [numpy_helper.from_array(randn(16, 6), "W_r"),
      numpy_helper.from_array(randn(6) * 0.1, "b_r"), i64("k", 3)],
     [("one", randn(1, 1, 16)), ("long", randn(3, 257, 16))])

save("gptoss",
     [helper.make_node("Gemm", ["x", "W_r", "b_r"], ["logits"], name="router", transB=1),
      helper.make_node("TopK", ["logits", "k"], ["top", "idx"], name="topk", axis=-1),
      helper.make_node("Softmax", ["top"], ["w"], name="softmax", axis=1)],
     [vi("x", F, ["n", 16])], [vi("w", F, ["n", 2]), vi("idx", I64, ["n", 2])],
     [numpy_helper.from_array(randn(4, 16), "W_r"),
      numpy_helper.from_array(np.array([0.5, -0.25, 0.5, 0.5], np.float32), "b_r"),
      i64("k", 2)],
     [("one", randn(1, 16)), ("long", randn(1500, 16)),
      ("ties", with_zero_rows(randn(4, 16), [1, 2]))])

save("half",
     [helper.make_node("MatMul", ["x", "W_r"], ["logits"], name="gate"),
      helper.make_node("Cast", ["logits"], ["logits32"], name="to_f32", to=F),
      helper.make_node("Softmax", ["logits32"], ["probs"], name="softmax", axis=-1),
      helper.make_node("TopK", ["probs", "k"], ["w", "idx"], name="topk", axis=-1)],
     [vi("x", H, ["n", 16])], [vi("w", F, ["n", 2]), vi("idx", I64, ["n", 2])],
     [numpy_helper.from_array(randn(16, 4, dtype=np.float16), "W_r"), i64("k", 2)],
     [("one", randn(1, 16, dtype=np.float16)), ("long", randn(1500, 16, dtype=np.float16))])

# A whole MoE layer: y[n] = Σ_j w[n, j] · x[n]·V[idx[n, j]].
moe = router + [
    helper.make_node("Gather", ["V", "idx"], ["v"], name="experts", axis=0),  # [n, 2, 16, 4]
    helper.make_node("Unsqueeze", ["x", "ax12"], ["x4"], name="x4"),  # [n, 1, 1, 16]
    helper.make_node("MatMul", ["x4", "v"], ["xv"], name="expert_mm"),  # [n, 2, 1, 4]
    helper.make_node("Squeeze", ["xv", "ax2"], ["xv3"], name="xv3"),  # [n, 2, 4]
    helper.make_node("Unsqueeze", ["w", "axm1"], ["w3"], name="w3"),  # [n, 2, 1]
    helper.make_node("Mul", ["xv3", "w3"], ["wxv"], name="scale"),
    helper.make_node("ReduceSum", ["wxv", "ax1"], ["y"], name="combine", keepdims=0),
]
save("moe", moe, [vi("x", F, ["n", 16])], [vi("y", F, ["n", 4]), vi("idx", I64, ["n", 2])],
     router_inits + [numpy_helper.from_array(randn(8, 16, 4) * 0.5, "V"),
                     i64("ax12", 1, 2), i64("ax2", 2), i64("axm1", -1), i64("ax1", 1)],
     [("one", randn(1, 16)), ("long", randn(1500, 16)),
      ("ties", with_zero_rows(randn(5, 16), [2])), ("empty", randn(0, 16))])
