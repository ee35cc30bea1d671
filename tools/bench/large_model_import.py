#!/usr/bin/env python3
"""Import time and memory of a large model (weights in external data).

Generates a Llama-like stack (default 24 layers, d=1024, FFN 2816: q/k/v/o,
SwiGLU gate/up/down, RMSNorm scales; ~1.2 GB of fp32 weights) with its
weights in one external data file, then measures, in the same run:
  gatec MODEL --compile-to=onnx --emit=none  (import, shape inference, CSE)
  onnx.load(MODEL) in Python     (the peer: protobuf + external data read)
printing wall time, peak RSS and their ratio to the weight bytes.

With --compile, also the whole compile to a shared library (gatec MODEL
-o model.so: every phase, the weights packed into micro-kernel panels,
bitcode, clang), its wall time and peak RSS against the weight bytes.
With --target cuda, the compile is for the CUDA target (--gpu-arch, default
sm_90): the kernels' PTX is assembled by ptxas, and the weights are device
buffers uploaded once at run time (--device-constants), so they reach the
library as raw bytes as on the CPU; the size of the kernels' PTX is printed.

usage: large_model_import.py [--layers N] [--d D] [--ffn F] [--dir DIR]
                             [--compile] [--target cpu|cuda] [--gpu-arch A]
"""
import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("--layers", type=int, default=24)
ap.add_argument("--d", type=int, default=1024)
ap.add_argument("--ffn", type=int, default=2816)
ap.add_argument("--dir", default="/tmp/gatec-large")
ap.add_argument("--compile", action="store_true",
                help="also compile the model to a shared library")
ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
ap.add_argument("--gpu-arch", default="sm_90")
ap.add_argument("--inline", action="store_true",
                help="weights as raw_data inside the protobuf (< 2 GiB)")
ap.add_argument("--gatec", default=os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin", "gatec"))
args = ap.parse_args()

os.makedirs(args.dir, exist_ok=True)
path = os.path.join(args.dir, "model.onnx")
d, f = args.d, args.ffn
rng = np.random.default_rng(0)

if not os.path.exists(path):
    inits, nodes = [], []
    x = "x"
    def w(name, shape):
        a = (rng.standard_normal(shape, dtype=np.float32) * 0.02)
        inits.append(numpy_helper.from_array(a, name))
        return name
    for l in range(args.layers):
        p = "l%d_" % l
        eps = helper.make_tensor(p + "eps", TensorProto.FLOAT, [], [1e-6])
        inits.append(eps)
        nodes.append(helper.make_node("RMSNormalization", [x, w(p + "norm", [d])],
                                      [p + "n"], name=p + "norm", epsilon=1e-6))
        for proj in ["q", "k", "v"]:
            nodes.append(helper.make_node("MatMul", [p + "n", w(p + proj, [d, d])],
                                          [p + proj + "_out"], name=p + proj))
        nodes.append(helper.make_node("Add", [p + "q_out", p + "k_out"], [p + "qk"], name=p + "qk"))
        nodes.append(helper.make_node("Add", [p + "qk", p + "v_out"], [p + "qkv"], name=p + "qkv"))
        nodes.append(helper.make_node("MatMul", [p + "qkv", w(p + "o", [d, d])], [p + "attn"], name=p + "o"))
        nodes.append(helper.make_node("Add", [x, p + "attn"], [p + "h"], name=p + "res1"))
        nodes.append(helper.make_node("MatMul", [p + "h", w(p + "gate", [d, f])], [p + "g"], name=p + "gate"))
        nodes.append(helper.make_node("MatMul", [p + "h", w(p + "up", [d, f])], [p + "u"], name=p + "up"))
        nodes.append(helper.make_node("Sigmoid", [p + "g"], [p + "sg"], name=p + "sig"))
        nodes.append(helper.make_node("Mul", [p + "g", p + "sg"], [p + "silu"], name=p + "silu"))
        nodes.append(helper.make_node("Mul", [p + "silu", p + "u"], [p + "glu"], name=p + "glu"))
        nodes.append(helper.make_node("MatMul", [p + "glu", w(p + "down", [f, d])], [p + "ffn"], name=p + "down"))
        nodes.append(helper.make_node("Add", [p + "h", p + "ffn"], [p + "y"], name=p + "res2"))
        x = p + "y"
    nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    g = helper.make_graph(
        nodes, "large",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", d])],
        initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
    if args.inline:
        onnx.save(m, path)
    else:
        onnx.save(m, path, save_as_external_data=True,
                  all_tensors_to_one_file=True, location="weights.bin",
                  size_threshold=1024)
    del m, g, inits

if args.inline:
    weights = os.path.getsize(path)
    kind = "inline raw_data"
else:
    weights = os.path.getsize(os.path.join(args.dir, "weights.bin"))
    kind = "external data"
print("model: %d layers, d=%d, ffn=%d; weights %.1f MB (%s), protobuf %.1f KB"
      % (args.layers, d, f, weights / 1e6, kind, os.path.getsize(path) / 1e3))


def measure(cmd):
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr))
    rss_kb = int(r.stderr.strip().splitlines()[-1])
    return wall, rss_kb * 1024


peer = [sys.executable, "-c",
        "import onnx,sys; m=onnx.load(sys.argv[1]); "
        "print(sum(len(t.raw_data) for t in m.graph.initializer))", path]
# gatec maps external data lazily: touching every weight (as a backend
# will) is measured by --emit=mlir -o FILE, which writes each blob.
gw, grss = measure([args.gatec, path, "--compile-to=onnx", "--emit=none"])
sw, srss = measure([args.gatec, path, "--compile-to=onnx"])
pw, prss = measure(peer)
print("gatec import:     %6.2f s, peak RSS %7.1f MB (%.2f x weights)" % (gw, grss / 1e6, grss / weights))
print("gatec import + print for a person (weights elided): %6.2f s, peak RSS %7.1f MB" % (sw, srss / 1e6))
print("onnx.load (peer): %6.2f s, peak RSS %7.1f MB (%.2f x weights)" % (pw, prss / 1e6, prss / weights))
print("ratio gatec/peer: time %.2f, memory %.2f" % (gw / pw, grss / prss))
if args.compile:
    so = os.path.join(args.dir, "model.so")
    target = []
    if args.target == "cuda":
        target = ["--target=cuda", "--gpu-arch=" + args.gpu_arch]
    cw, crss = measure([args.gatec, path, "-o", so] + target)
    print("gatec compile to .so (%s): %6.2f s, peak RSS %7.1f MB (%.2f x weights); library %.1f MB"
          % (args.target, cw, crss / 1e6, crss / weights, os.path.getsize(so) / 1e6))
    if args.target == "cuda":
        kdir = os.path.join(args.dir, "kernels")
        measure([args.gatec, path, "--emit=none", "--dump-kernels=" + kdir] + target)
        ptx = [os.path.join(kdir, f) for f in os.listdir(kdir) if f.endswith(".ptx")]
        print("kernels: %d modules, %.2f MB of PTX in all"
              % (len(ptx), sum(os.path.getsize(f) for f in ptx) / 1e6))
