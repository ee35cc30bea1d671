#!/usr/bin/env python3
"""NonZero models over symbolic dims, their inputs and onnxruntime's outputs
(test/Execution/nonzero.test).

usage: make_nonzero_models.py OUTDIR
  nonzero.onnx   NonZero(x[b, s] f32): y[2, n]. Cases: one (1, 1, non-zero),
                 none (1, 1, zero: y is [2, 0]), long (3, 150: zeros, -0.0,
                 NaN and inf; 150 crosses the 64-element blocks), empty
                 (0, 5), dense (67, 61: every element non-zero, 4087
                 columns)
  nonzero3.onnx  NonZero(x[a, b, c] i32) (rank 3). Case: mixed (3, 4, 70)
  nonzero0.onnx  NonZero of a bool scalar: y[0, n], as the spec says
                 (onnxruntime gives numpy's [1, n]: no reference). Cases:
                 true, false
  experts.onnx   the eager MoE experts loop as the TorchScript exporter
                 writes it for one expert: the rows of a token-by-top-k
                 expert mask [t, k] that select expert e (Equal, NonZero),
                 their token indices gathered (Gather of row 0 of NonZero),
                 the tokens' hidden states gathered and scaled by their
                 routing weights (GatherND), and scattered back
                 (ScatterND, reduction add) into a zero [t, d] output.
                 Cases: one (t 1, routed to e), miss (t 1, not routed to
                 e: no row), long (t 300)
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


def save(name, nodes, inputs, outputs, inits, cases, opset=17, ref=True):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for tag, arrays in cases:
        for k, a in enumerate(arrays):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        if not ref:
            continue
        rs = sess.run(None, {i.name: a for i, a in zip(inputs, arrays)})
        for k, r in enumerate(rs):
            np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, k)), r)


long = rng.standard_normal((3, 150)).astype(np.float32)
long[rng.random((3, 150)) < 0.5] = 0.0
long[0, :70] = 0.0
long[1, 3] = -0.0
long[1, 4] = np.nan
long[2, 7] = np.inf
save("nonzero", [helper.make_node("NonZero", ["x"], ["y"], name="nz")],
     [vi("x", TP.FLOAT, ["b", "s"])], [vi("y", TP.INT64, [2, "n"])], [],
     [("one", [np.array([[0.5]], np.float32)]),
      ("none", [np.array([[0.0]], np.float32)]),
      ("long", [long]),
      ("empty", [np.zeros((0, 5), np.float32)]),
      ("dense", [rng.uniform(1, 2, (67, 61)).astype(np.float32)])])

mixed = rng.integers(-2, 3, (3, 4, 70)).astype(np.int32)
save("nonzero3", [helper.make_node("NonZero", ["x"], ["y"], name="nz3")],
     [vi("x", TP.INT32, ["a", "b", "c"])], [vi("y", TP.INT64, [3, "n"])], [],
     [("mixed", [mixed])])

save("nonzero0", [helper.make_node("NonZero", ["x"], ["y"], name="nz0")],
     [vi("x", TP.BOOL, [])], [vi("y", TP.INT64, [0, "n"])], [],
     [("true", [np.array(True)]), ("false", [np.array(False)])], ref=False)

# One expert (e = 2 of 4) of the eager experts loop: hidden [t, d], the
# router's top-2 experts [t, 2] and their weights [t, 2].
D = 8
i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
save("experts",
     [helper.make_node("Equal", ["topk", "e"], ["hit"]),
      helper.make_node("NonZero", ["hit"], ["where"], name="where"),
      helper.make_node("Gather", ["where", "zero"], ["tok"], axis=0),
      helper.make_node("Gather", ["where", "one"], ["slot"], axis=0),
      helper.make_node("Unsqueeze", ["tok", "last"], ["tok1"]),
      helper.make_node("GatherND", ["hidden", "tok1"], ["rows"]),
      helper.make_node("Transpose", ["where"], ["pairs"], perm=[1, 0]),
      helper.make_node("GatherND", ["weights", "pairs"], ["w"]),
      helper.make_node("Unsqueeze", ["w", "last"], ["w1"]),
      helper.make_node("Mul", ["rows", "w1"], ["scaled"]),
      helper.make_node("Shape", ["hidden"], ["hshape"]),
      helper.make_node("ConstantOfShape", ["hshape"], ["zeros"],
                       value=numpy_helper.from_array(np.zeros(1, np.float32))),
      helper.make_node("ScatterND", ["zeros", "tok1", "scaled"], ["y"],
                       name="index_add", reduction="add")],
     [vi("hidden", TP.FLOAT, ["t", D]), vi("topk", TP.INT64, ["t", 2]),
      vi("weights", TP.FLOAT, ["t", 2])],
     [vi("y", TP.FLOAT, ["t", D])],
     [i64("e", 2), i64("zero", 0), i64("one", 1), i64("last", [1])],
     [("one", [rng.standard_normal((1, D)).astype(np.float32),
               np.array([[2, 0]], np.int64), np.array([[0.7, 0.3]], np.float32)]),
      ("miss", [rng.standard_normal((1, D)).astype(np.float32),
                np.array([[1, 3]], np.int64), np.array([[0.6, 0.4]], np.float32)]),
      ("long", [rng.standard_normal((300, D)).astype(np.float32),
                np.stack([rng.permutation(4)[:2] for _ in range(300)]).astype(np.int64),
                rng.random((300, 2)).astype(np.float32)])],
     opset=18)
