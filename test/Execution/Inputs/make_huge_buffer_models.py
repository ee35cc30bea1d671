#!/usr/bin/env python3
"""Models whose buffers are sized at run time from the data or from a dim
of an empty input, their inputs and onnxruntime's outputs
(test/Execution/huge-buffer-sizes.test).

usage: make_huge_buffer_models.py OUTDIR
  cos.onnx     ConstantOfShape(s[1] i64) f32
  expand.onnx  Expand(x[a] f32, s[3] i64)
  tile.onnx    Tile(x[a, b, c] f32, repeats[3] i64)
  rsum.onnx    ReduceSum(x[a, b] f32, axes [1], keepdims 0)
  softmax.onnx Softmax(x[a, b] f32, axis 0)
  Inputs: <model>_ok_in<k>.npy (small; <model>_ok_ref0.npy is
  onnxruntime's output) and <model>_huge_in<k>.npy (2^62 elements, or an
  empty [2^62, 0] / [0, 2^62] input).
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
BIG = 1 << 62


class Empty:
    """An empty f32 tensor of `shape` (one dim 2^62, one 0), written as a
    .npy header alone: numpy refuses to make the array (its size in bytes
    as the product of the dims overflows)."""

    def __init__(self, *shape):
        self.shape = shape

    def save(self, path):
        h = ("{'descr': '<f4', 'fortran_order': False, 'shape': %r, }"
             % (self.shape,)).encode()
        h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h)


def save(name, node, inputs, inits, ok, huge):
    g = helper.make_graph([node], name, inputs, [vi("y", TP.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(m, os.path.join(out, name + ".onnx"))
    sess = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for tag, arrays in (("ok", ok), ("huge", huge)):
        for k, a in enumerate(arrays):
            path = os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k))
            a.save(path) if isinstance(a, Empty) else np.save(path, a)
    ref = sess.run(None, {i.name: a for i, a in zip(inputs, ok)})[0]
    np.save(os.path.join(out, name + "_ok_ref0.npy"), ref)


i64 = lambda *v: np.array(v, np.int64)
f32 = lambda *s: np.arange(np.prod(s), dtype=np.float32).reshape(s)
save("cos", helper.make_node("ConstantOfShape", ["s"], ["y"], name="COS",
                             value=numpy_helper.from_array(np.array([1.5], np.float32))),
     [vi("s", TP.INT64, [1])], [], [i64(5)], [i64(BIG)])
save("expand", helper.make_node("Expand", ["x", "s"], ["y"], name="EX"),
     [vi("x", TP.FLOAT, ["a"]), vi("s", TP.INT64, [3])], [],
     [f32(3), i64(2, 1, 3)], [f32(1), i64(1 << 31, 1 << 31, 4)])
save("tile", helper.make_node("Tile", ["x", "r"], ["y"], name="TL"),
     [vi("x", TP.FLOAT, ["a", "b", "c"]), vi("r", TP.INT64, [3])], [],
     [f32(1, 2, 3), i64(2, 1, 2)], [f32(1, 1, 4), i64(BIG, 1, 1)])
save("rsum", helper.make_node("ReduceSum", ["x", "ax"], ["y"], name="RS", keepdims=0),
     [vi("x", TP.FLOAT, ["a", "b"])], [numpy_helper.from_array(i64(1), "ax")],
     [f32(3, 4)], [Empty(BIG, 0)])
save("softmax", helper.make_node("Softmax", ["x"], ["y"], name="SM", axis=0),
     [vi("x", TP.FLOAT, ["a", "b"])], [], [f32(3, 4) / 10],
     [Empty(0, BIG)])
