#!/usr/bin/env python3
"""y = ReduceSum(ConstantOfShape(shape, value=1.5)) for a few static shapes
(test/Execution/large-constant-of-shape.test).

usage: make_constant_of_shape.py OUTDIR
  cos_2p16.onnx [256, 256]     (folded: a splat constant)
  cos_2p20.onnx [2^20]         (kept as an op, filled at run time)
  cos_2p31.onnx [2^31]         (kept as an op; compile only)
  cos_2p40.onnx [2^16, 2^24]   (kept as an op; compile only)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, shape in [("cos_2p16", [256, 256]), ("cos_2p20", [1 << 20]),
                    ("cos_2p31", [1 << 31]), ("cos_2p40", [1 << 16, 1 << 24])]:
    nodes = [
        helper.make_node("ConstantOfShape", ["s"], ["c"], name="cos",
                         value=helper.make_tensor("v", TP.FLOAT, [1], [1.5])),
        helper.make_node("ReduceSum", ["c"], ["y"], name="sum", keepdims=0)]
    g = helper.make_graph(
        nodes, name, [], [helper.make_tensor_value_info("y", TP.FLOAT, [])],
        initializer=[numpy_helper.from_array(np.array(shape, np.int64), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, os.path.join(out, name + ".onnx"))
