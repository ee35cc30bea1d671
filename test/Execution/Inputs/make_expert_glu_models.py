#!/usr/bin/env python3
"""The routed experts' SwiGLU as the exporters write transformers' MoE
experts, with symbolic rows, their inputs and onnxruntime's outputs
(test/Execution/expert-glu.test).

usage: make_expert_glu_models.py OUTDIR
  batched.onnx  batched_mm (the dynamo export): every row r with the
                weights of expert idx[r] (GatherND of the experts' fused
                gate_up [E=4, 2F=24, D=16] by idx [r, 1]), MatMul with x as
                [r, D, 1], Squeeze, Split in halves, silu(a)·b: y [r, 12].
                Cases: one (1 row), rows (300 rows, experts in [-4, 4):
                negative ones count from the back), empty (0 rows), oob
                (expert 4: out of range, no reference: onnxruntime fails)
  eager.onnx    one step of the eager loop (the TorchScript export): one
                expert e (a scalar input) for all rows, MatMul(x,
                Transpose(Gather(gate_up, e))), Slice halves, silu(a)·b.
                Cases: e2 (e = 2, 5 rows), last (e = -1, 3 rows), oob (e = 7)
  oss.onnx      GPT-OSS's clamped SwiGLU as the dynamo export writes its
                batched experts: x as a row times GatherND of gate_up
                [E, D, 2F] (in, out), plus GatherND of its bias [E, 2F], the
                gate and up interleaved (columns 0::2 and 1::2), gate =
                min(gate, 7), up = clamp(up, -7, 7), (up + 1)·gate·σ(1.702·
                gate). Weights large enough that the clamps bite. Cases:
                rows (50 rows), one (1 row), inf (±inf in x: Clip's absent
                min is lowest(), so a -inf gate gives 0, not NaN)
  oss_eager.onnx  the same for one step of the eager loop (TorchScript):
                MatMul(x, Gather(gate_up, e)) + Gather(bias, e). Case: e1
                (e = 1, 7 rows)
  <model>_<case>_in<k>.npy, <model>_<case>_ref<k>.npy
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
rng = np.random.default_rng(0)
E, F, D = 4, 12, 16
gate_up = numpy_helper.from_array(
    (rng.standard_normal((E, 2 * F, D)) * 0.3).astype(np.float32), "experts.gate_up_proj")


def i64(name, vals):
    return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)


def save(name, nodes, inputs, outputs, inits, cases, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for tag, arrays, ref in cases:
        for k, a in enumerate(arrays):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        if ref:
            rs = sess.run(None, {i.name: a for i, a in zip(inputs, arrays)})
            for k, r in enumerate(rs):
                np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, k)), r)


def swiglu(nodes, a, b, y):
    nodes += [helper.make_node("Sigmoid", [a], ["sig"]),
              helper.make_node("Mul", [a, "sig"], ["silu"]),
              helper.make_node("Mul", ["silu", b], [y])]


def x(r):
    return rng.standard_normal((r, D)).astype(np.float32)


nodes = [helper.make_node("GatherND", ["experts.gate_up_proj", "idx"], ["w"]),
         helper.make_node("Unsqueeze", ["x", "ax2"], ["xc"]),
         helper.make_node("MatMul", ["w", "xc"], ["p3"]),
         helper.make_node("Squeeze", ["p3", "ax2"], ["p"]),
         helper.make_node("Split", ["p"], ["a", "b"], axis=1, num_outputs=2)]
swiglu(nodes, "a", "b", "y")
save("batched", nodes,
     [vi("x", TP.FLOAT, ["r", D]), vi("idx", TP.INT64, ["r", 1])],
     [vi("y", TP.FLOAT, ["r", F])], [gate_up, i64("ax2", [2])],
     [("one", [x(1), np.array([[3]], np.int64)], True),
      ("rows", [x(300), rng.integers(-E, E, (300, 1)).astype(np.int64)], True),
      ("empty", [x(0), np.zeros((0, 1), np.int64)], True),
      ("oob", [x(2), np.array([[1], [4]], np.int64)], False)], opset=18)

nodes = [helper.make_node("Gather", ["experts.gate_up_proj", "e"], ["we"], axis=0),
         helper.make_node("Transpose", ["we"], ["wt"], perm=[1, 0]),
         helper.make_node("MatMul", ["x", "wt"], ["p"]),
         helper.make_node("Slice", ["p", "s0", "s1", "ax1"], ["a"]),
         helper.make_node("Slice", ["p", "s1", "s2", "ax1"], ["b"])]
swiglu(nodes, "a", "b", "y")
save("eager", nodes,
     [vi("x", TP.FLOAT, ["r", D]), vi("e", TP.INT64, [])],
     [vi("y", TP.FLOAT, ["r", F])],
     [gate_up, i64("s0", [0]), i64("s1", [F]), i64("s2", [2 * F]), i64("ax1", [1])],
     [("e2", [x(5), np.array(2, np.int64)], True),
      ("last", [x(3), np.array(-1, np.int64)], True),
      ("oob", [x(3), np.array(7, np.int64)], False)], opset=17)

# GPT-OSS: gate_up [E, D, 2F] (in, out) with a bias, interleaved columns.
oss_w = numpy_helper.from_array(
    (rng.standard_normal((E, D, 2 * F)) * 1.5).astype(np.float32), "experts.gate_up_proj")
oss_b = numpy_helper.from_array(
    rng.standard_normal((E, 2 * F)).astype(np.float32), "experts.gate_up_proj_bias")
consts = [i64("ax1", [1]), i64("s0", [0]), i64("s1", [1]), i64("big", [2 * F]),
          i64("st2", [2]),
          numpy_helper.from_array(np.array(7.0, np.float32), "lim"),
          numpy_helper.from_array(np.array(-7.0, np.float32), "nlim"),
          numpy_helper.from_array(np.array(1.702, np.float32), "alpha"),
          numpy_helper.from_array(np.array(1.0, np.float32), "one")]


def oss_tail(nodes):
    nodes += [helper.make_node("Slice", ["p", "s0", "big", "ax1", "st2"], ["ga"]),
              helper.make_node("Slice", ["p", "s1", "big", "ax1", "st2"], ["up"]),
              helper.make_node("Clip", ["ga", "", "lim"], ["gc"]),
              helper.make_node("Clip", ["up", "nlim", "lim"], ["uc"]),
              helper.make_node("Mul", ["gc", "alpha"], ["ga2"]),
              helper.make_node("Sigmoid", ["ga2"], ["sg"]),
              helper.make_node("Mul", ["gc", "sg"], ["glu"]),
              helper.make_node("Add", ["uc", "one"], ["u1"]),
              helper.make_node("Mul", ["u1", "glu"], ["y"])]


# ±inf in x: a gate of -inf is clipped to -FLT_MAX by Clip's default min
# (the output is then 0, not NaN).
x_inf = x(4)
x_inf[0, 0], x_inf[1, 3], x_inf[2, 5] = np.inf, -np.inf, np.inf
nodes = [helper.make_node("GatherND", ["experts.gate_up_proj", "idx"], ["w"]),
         helper.make_node("GatherND", ["experts.gate_up_proj_bias", "idx"], ["bias"]),
         helper.make_node("Unsqueeze", ["x", "ax1"], ["xr"]),
         helper.make_node("MatMul", ["xr", "w"], ["p3"]),
         helper.make_node("Squeeze", ["p3", "ax1"], ["pm"]),
         helper.make_node("Add", ["pm", "bias"], ["p"])]
oss_tail(nodes)
save("oss", nodes,
     [vi("x", TP.FLOAT, ["r", D]), vi("idx", TP.INT64, ["r", 1])],
     [vi("y", TP.FLOAT, ["r", F])], [oss_w, oss_b] + consts,
     [("rows", [x(50), rng.integers(0, E, (50, 1)).astype(np.int64)], True),
      ("one", [x(1), np.array([[2]], np.int64)], True),
      ("inf", [x_inf, np.array([[0], [1], [2], [3]], np.int64)], True)], opset=18)

nodes = [helper.make_node("Gather", ["experts.gate_up_proj", "e"], ["w"], axis=0),
         helper.make_node("Gather", ["experts.gate_up_proj_bias", "e"], ["bias"], axis=0),
         helper.make_node("MatMul", ["x", "w"], ["pm"]),
         helper.make_node("Add", ["pm", "bias"], ["p"])]
oss_tail(nodes)
save("oss_eager", nodes,
     [vi("x", TP.FLOAT, ["r", D]), vi("e", TP.INT64, [])],
     [vi("y", TP.FLOAT, ["r", F])], [oss_w, oss_b] + consts,
     [("e1", [x(7), np.array(1, np.int64)], True)], opset=17)
