#!/usr/bin/env python3
"""Models with empty tensors (a 0-sized dim in a graph input or an
initializer), their inputs and onnxruntime's outputs
(test/Execution/empty-tensors.test).

usage: make_empty_models.py OUTDIR
  NAME.onnx, NAME_in<i>.npy (inputs, in graph order), NAME_ref<k>.npy
  add0       x[2,0] + b[0] (an empty initializer)          -> [2,0]
  matmul0k   x[2,0] @ w[0,3]: an empty reduction            -> [2,3] zeros
  matmulrelu x[0,3,4] @ w[4,5], Relu (GEMM + epilogue)      -> [0,3,5]
  gather0    w[5,4] gathered with indices [2,0]              -> [2,0,4]
  softmax0   Softmax of x[0,3,5]                             -> [0,3,5]
  concat0    Concat(x[2,0], z[2,3]) on axis 1                -> [2,3] values
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
N = helper.make_node


def vi(n, s, t=TP.FLOAT):
    return helper.make_tensor_value_info(n, t, list(s))


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


rng = np.random.default_rng(0)


def case(name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    path = os.path.join(out, name + ".onnx")
    onnx.save(m, path)
    feeds = {}
    for i, v in enumerate(inputs):
        shape = [d.dim_value for d in v.type.tensor_type.shape.dim]
        if v.type.tensor_type.elem_type == TP.INT64:
            a = np.zeros(shape, np.int64)
        else:
            a = rng.standard_normal(shape).astype(np.float32)
        feeds[v.name] = a
        np.save(os.path.join(out, "%s_in%d.npy" % (name, i)), a)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, r in enumerate(sess.run(None, feeds)):
        np.save(os.path.join(out, "%s_ref%d.npy" % (name, k)), r)


case("add0", [N("Add", ["x", "b"], ["y"], name="add")],
     [vi("x", [2, 0])], [vi("y", [2, 0])], [const("b", np.zeros(0, np.float32))])
case("matmul0k", [N("MatMul", ["x", "w"], ["y"], name="mm")],
     [vi("x", [2, 0])], [vi("y", [2, 3])],
     [const("w", np.zeros((0, 3), np.float32))])
# K = 0 with a fused epilogue: the bias alone (tile-and-fuse crashed on the
# contraction's 0-extent loop when fusing it into the Add's loop).
case("matmul0kbias", [N("MatMul", ["x", "w"], ["m"], name="mm"),
                      N("Add", ["m", "c"], ["y"], name="bias")],
     [vi("x", [2, 0])], [vi("y", [2, 5])],
     [const("w", np.zeros((0, 5), np.float32)),
      const("c", np.arange(5, dtype=np.float32))])
case("gemm0kbias", [N("Gemm", ["x", "w", "c"], ["y"], name="gemm", transB=1,
                      alpha=2.0, beta=0.5)],
     [vi("x", [2, 0])], [vi("y", [2, 5])],
     [const("w", np.zeros((5, 0), np.float32)),
      const("c", np.arange(5, dtype=np.float32))])
case("matmulrelu", [N("MatMul", ["x", "w"], ["m"], name="mm"),
                    N("Relu", ["m"], ["y"], name="relu")],
     [vi("x", [0, 3, 4])], [vi("y", [0, 3, 5])],
     [const("w", rng.standard_normal((4, 5)).astype(np.float32))])
case("gather0", [N("Gather", ["w", "i"], ["y"], name="gather", axis=0)],
     [vi("i", [2, 0], TP.INT64)], [vi("y", [2, 0, 4])],
     [const("w", rng.standard_normal((5, 4)).astype(np.float32))])
case("softmax0", [N("Softmax", ["x"], ["y"], name="sm", axis=-1)],
     [vi("x", [0, 3, 5])], [vi("y", [0, 3, 5])])
case("concat0", [N("Concat", ["x", "z"], ["y"], name="cat", axis=1)],
     [vi("x", [2, 0]), vi("z", [2, 3])], [vi("y", [2, 3])])
