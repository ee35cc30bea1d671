#!/usr/bin/env python3
"""bf16 arithmetic in a compiled library: Cast to bf16, Add, Mul, Cast back.
The reference rounds to bf16 after every op (ml_dtypes, independent of the
compiler); the library must agree exactly. onnxruntime has no bf16 Add.

usage: bf16_arith.py GATEC GATEC_RUN WORKDIR
"""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
import onnx.helper as h

gatec, gatec_run, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
F, BF = onnx.TensorProto.FLOAT, onnx.TensorProto.BFLOAT16
g = h.make_graph(
    [h.make_node("Cast", ["x"], ["a"], to=BF), h.make_node("Cast", ["y"], ["b"], to=BF),
     h.make_node("Add", ["a", "b"], ["c"]), h.make_node("Mul", ["c", "a"], ["d"]),
     h.make_node("Cast", ["d"], ["z"], to=F)],
    "bf16_arith", [h.make_tensor_value_info("x", F, [4, 5]), h.make_tensor_value_info("y", F, [4, 5])],
    [h.make_tensor_value_info("z", F, [4, 5])])
model = os.path.join(work, "bf16.onnx")
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), model)
rng = np.random.default_rng(16)
x = (rng.standard_normal((4, 5)) * 10).astype(np.float32)
y = rng.standard_normal((4, 5)).astype(np.float32)
bf = ml_dtypes.bfloat16
a, b = x.astype(bf), y.astype(bf)
c = (a.astype(np.float32) + b.astype(np.float32)).astype(bf)
z = (c.astype(np.float32) * a.astype(np.float32)).astype(bf).astype(np.float32)
for n, v in (("x", x), ("y", y), ("z", z)):
    np.save(os.path.join(work, n + ".npy"), v)
subprocess.run([gatec, model, "-o", os.path.join(work, "bf16.so")], check=True)
r = subprocess.run([gatec_run, os.path.join(work, "bf16.so"),
                    "--input=@" + os.path.join(work, "x.npy"),
                    "--input=@" + os.path.join(work, "y.npy"),
                    "--expected-output=@" + os.path.join(work, "z.npy"),
                    "--atol=0", "--rtol=0"], capture_output=True, text=True)
print(r.stdout + r.stderr)
print("bf16 arithmetic: %s" % ("exact" if r.returncode == 0 else "MISMATCH"))
sys.exit(r.returncode)
