#!/usr/bin/env python3
"""A model whose intermediate buffers are as large as an input says, for
test/Execution/alloc-failure.test, and a runner under an address-space cap.

usage: make_alloc_model.py OUTDIR
  alloc.onnx  y = ReduceMax(Concat(Range(0, n, 1), x)), n an i64 scalar
              input, x[2] i64: the Range and the Concat are buffers of n
              elements inside the model (not outputs)
usage: make_alloc_model.py --capped MIB COMMAND ARGS...
  runs COMMAND with RLIMIT_AS = MIB MiB and exits with its status
"""
import os
import resource
import subprocess
import sys

if sys.argv[1] == "--capped":
    cap = int(sys.argv[2]) << 20
    sys.exit(subprocess.run(sys.argv[3:], preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_AS, (cap, cap))).returncode)

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
nodes = [helper.make_node("Range", ["zero", "n", "one"], ["r"], name="positions"),
         helper.make_node("Concat", ["r", "x"], ["c"], name="cat", axis=0),
         helper.make_node("ReduceMax", ["c"], ["y"], name="max", keepdims=0)]
g = helper.make_graph(
    nodes, "alloc", [vi("n", TP.INT64, []), vi("x", TP.INT64, [2])],
    [vi("y", TP.INT64, [])],
    initializer=[numpy_helper.from_array(np.array(v, np.int64), k)
                 for k, v in [("zero", 0), ("one", 1)]])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
onnx.checker.check_model(m)
onnx.save(m, os.path.join(out, "alloc.onnx"))
