#!/usr/bin/env python3
"""OneHot and TopK models over symbolic dims, their inputs and onnxruntime's
outputs (test/Execution/onehot-topk.test).

usage: make_onehot_topk_models.py OUTDIR
  onehot.onnx     OneHot(indices[b, s] i64, depth 5, values [-1, 3] f32,
                  axis -2): y[b, 5, s]. Cases: one (1, 1), long (2, 7:
                  negative and out-of-range indices)
  onehot_rt.onnx  OneHot(indices[n] f32, depth f32 and values f32 read at
                  run time, axis 0). Cases: ok (depth 4.7, indices
                  truncated toward zero, NaN and inf: all off), zero (depth
                  0.5: truncated, below 1)
  router.onnx     a MoE router: TopK(logits[t, e], K 2) (largest, values
                  and indices), then Softmax of the values; and the 3
                  smallest (largest 0). Cases: one (1, 8), long (9, 8:
                  ties, NaN), short (e = 2 < K = 3)
  topk_rt.onnx    TopK(x[n, c] i32, K read at run time, axis 0). Cases:
                  all (K = n: a full sort with ties), some (K = 2), zero
                  (K = 0), big (K = n + 1)
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
F, I64 = TP.FLOAT, TP.INT64
rng = np.random.default_rng(0)


def save(name, nodes, inputs, outputs, inits, cases, opset=21):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for tag, arrays, ok in cases:
        for k, a in enumerate(arrays):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        if ok:
            rs = sess.run(None, {i.name: a for i, a in zip(inputs, arrays)})
            for k, r in enumerate(rs):
                np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, k)), r)


save("onehot",
     [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="onehot",
                       axis=-2)],
     [vi("i", I64, ["b", "s"])], [vi("y", F, ["b", 5, "s"])],
     [numpy_helper.from_array(np.array(5, np.int64), "depth"),
      numpy_helper.from_array(np.array([-1.0, 3.0], np.float32), "values")],
     [("one", [np.array([[2]], np.int64)], True),
      ("long", [np.array([[0, 1, 4, -1, -5, 5, -6],
                          [3, -2, 2, 9, -9, 0, 4]], np.int64)], True)])

save("onehot_rt",
     [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="onehot",
                       axis=0)],
     [vi("i", F, ["n"]), vi("depth", F, []), vi("values", F, [2])],
     [vi("y", F, ["d", "n"])], [],
     [("ok", [np.array([0.9, -1.5, 3.99, 4.2, -4.9, np.nan, np.inf], np.float32),
              np.array(4.7, np.float32), np.array([0.5, -2.0], np.float32)], True),
      ("zero", [np.array([0.0], np.float32), np.array(0.5, np.float32),
                np.array([0.0, 1.0], np.float32)], False)])

router_logits = np.round(rng.standard_normal((9, 8)) * 2) / 2  # ties
router_logits[3, [1, 6]] = np.nan
router_logits[4, :] = 0.5  # all equal
save("router",
     [helper.make_node("TopK", ["logits", "k2"], ["top", "experts"], name="top2"),
      helper.make_node("Softmax", ["top"], ["weights"], axis=-1),
      helper.make_node("TopK", ["logits", "k3"], ["low", "low_idx"], name="low3",
                       largest=0)],
     [vi("logits", F, ["t", "e"])],
     [vi("weights", F, ["t", 2]), vi("experts", I64, ["t", 2]),
      vi("low", F, ["t", 3]), vi("low_idx", I64, ["t", 3])],
     [numpy_helper.from_array(np.array([2], np.int64), "k2"),
      numpy_helper.from_array(np.array([3], np.int64), "k3")],
     [("one", [rng.standard_normal((1, 8)).astype(np.float32)], True),
      ("long", [router_logits.astype(np.float32)], True),
      ("short", [rng.standard_normal((4, 2)).astype(np.float32)], False)])

x_rt = rng.integers(-3, 4, (6, 3)).astype(np.int32)
save("topk_rt",
     [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=0)],
     [vi("x", TP.INT32, ["n", "c"]), vi("k", I64, [1])],
     [vi("v", TP.INT32, ["k", "c"]), vi("i", I64, ["k", "c"])], [],
     [("all", [x_rt, np.array([6], np.int64)], True),
      ("some", [x_rt, np.array([2], np.int64)], True),
      ("zero", [x_rt, np.array([0], np.int64)], True),
      ("big", [x_rt, np.array([7], np.int64)], False)])
