#!/usr/bin/env python3
"""Outputs that share one buffer: y = x·W and z = Identity(y) (and a
Reshape of it) are both graph outputs, so the model returns one buffer
twice. Writes alias.onnx / reshape.onnx and, for each size, the input and
numpy references (x·W in fp64, rounded to f32) into DIR."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as NH

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
K, N = 64, 33
W = rng.standard_normal((K, N)).astype(np.float32)


def save(name, second, shape2):
    nodes = [H.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    inits = [NH.from_array(W, "W")]
    if second == "Identity":
        nodes.append(H.make_node("Identity", ["y"], ["z"], name="same"))
    else:
        inits.append(NH.from_array(np.array([0, 0, 3, 11], np.int64), "shape"))
        nodes.append(H.make_node("Reshape", ["y", "shape"], ["z"], name="heads"))
    g = H.make_graph(nodes, name, [H.make_tensor_value_info("x", TP.FLOAT, ["batch", "seq", K])],
                     [H.make_tensor_value_info("y", TP.FLOAT, ["batch", "seq", N]),
                      H.make_tensor_value_info("z", TP.FLOAT, shape2)], inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out, name + ".onnx"))


save("alias", "Identity", ["batch", "seq", N])
save("reshape", "Reshape", ["batch", "seq", 3, 11])
# 6600 floats (glibc reuses the freed block), 33000 (132 KB: glibc unmaps
# it on free), 99000 (396 KB: the model's buffer cache keeps it).
for tag, (b, t) in {"small": (2, 100), "mapped": (1, 1000), "cached": (3, 1000)}.items():
    x = rng.standard_normal((b, t, K)).astype(np.float32)
    y = (x.astype(np.float64) @ W.astype(np.float64)).astype(np.float32)
    np.save(os.path.join(out, "x_%s.npy" % tag), x)
    np.save(os.path.join(out, "y_%s.npy" % tag), y)
    np.save(os.path.join(out, "z_%s.npy" % tag), y.reshape(b, t, 3, 11))
