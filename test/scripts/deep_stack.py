#!/usr/bin/env python3
"""A deep Llama-like stack at tiny width: L layers of RMSNorm, q/k/v
projections (summed), output projection, residual, SwiGLU FFN, residual,
with symbolic batch and sequence. The same layer as
tools/bench/large_model_import.py, for tests that need depth, not width.

With --run, also compiles it (gatec OUT.onnx -o OUT.so) and runs it with
gatec-run at sequence lengths 1 and 37 (batch 1 and 2) against
onnxruntime (within 1e-4 * (1 + |ref|)).

With --external, the weights are saved as ONNX external data (one file
beside the model), which gatec maps and whose pages its passes drop once
they have read a weight (passes/common/MappedPages.h).

usage: deep_stack.py OUT.onnx [--layers L] [--d D] [--ffn F] [--external]
                     [--run] [--gatec PATH] [--gatec-run PATH]
"""
import argparse
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=48)
ap.add_argument("--d", type=int, default=8)
ap.add_argument("--ffn", type=int, default=16)
ap.add_argument("--external", action="store_true")
ap.add_argument("--run", action="store_true")
ap.add_argument("--gatec", default="gatec")
ap.add_argument("--gatec-run", default="gatec-run")
args = ap.parse_args()
d, f = args.d, args.ffn
rng = np.random.default_rng(0)
inits, nodes = [], []


def w(name, shape):
    # Small enough that 48 residual layers stay finite.
    a = 0.3 * rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[0])
    inits.append(numpy_helper.from_array(a.astype(np.float32), name))
    return name


def node(op, ins, out, **kw):
    nodes.append(helper.make_node(op, ins, [out], name=out, **kw))
    return out


x = "x"
for l in range(args.layers):
    p = "l%d_" % l
    n = node("RMSNormalization", [x, w(p + "norm_w", [d])], p + "norm", epsilon=1e-6)
    q, k, v = (node("MatMul", [n, w(p + c, [d, d])], p + c + "_proj") for c in "qkv")
    s = node("Add", [node("Add", [q, k], p + "qk"), v], p + "qkv")
    h = node("Add", [x, node("MatMul", [s, w(p + "o", [d, d])], p + "o_proj")], p + "res1")
    g = node("MatMul", [h, w(p + "gate", [d, f])], p + "gate_proj")
    u = node("MatMul", [h, w(p + "up", [d, f])], p + "up_proj")
    silu = node("Mul", [g, node("Sigmoid", [g], p + "sig")], p + "silu")
    dn = node("MatMul", [node("Mul", [silu, u], p + "glu"), w(p + "down", [f, d])],
              p + "down_proj")
    x = node("Add", [h, dn], p + "res2")
node("Identity", [x], "y")
g = helper.make_graph(
    nodes, "deep_stack",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", d])],
    initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
if args.external:
    import os
    onnx.save(m, args.out, save_as_external_data=True, all_tensors_to_one_file=True,
              location=os.path.basename(args.out) + ".data", size_threshold=1024)
else:
    onnx.save(m, args.out)
print("deep_stack: %d layers, d=%d, ffn=%d" % (args.layers, d, f))
if args.run:
    import onnxruntime as ort

    so = args.out[:-len(".onnx")] + ".so"
    subprocess.run([args.gatec, args.out, "-o", so], check=True)
    sess = ort.InferenceSession(args.out, providers=["CPUExecutionProvider"])
    failures = 0
    for b, t in [(1, 1), (2, 37)]:
        x = np.random.default_rng(t).standard_normal((b, t, d), dtype=np.float32)
        xp, yp = args.out + ".x.npy", args.out + ".y.npy"
        np.save(xp, x)
        r = subprocess.run([args.gatec_run, so, "--input=@" + xp, "--output=@" + yp],
                           capture_output=True, text=True)
        ref = sess.run(None, {"x": x})[0]
        if r.returncode != 0:
            print("FAIL batch %d seq %d: gatec-run exit %d\n%s" % (b, t, r.returncode, r.stderr))
            failures += 1
            continue
        got = np.load(yp)
        err = float(np.max(np.abs(got - ref) / (1 + np.abs(ref))))
        ok = got.shape == ref.shape and err <= 1e-4
        failures += not ok
        print("%s batch %d seq %d: max scaled error %.2e" % ("ok" if ok else "FAIL", b, t, err))
    print("deep_stack vs onnxruntime: %d failures" % failures)
