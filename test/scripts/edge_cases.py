#!/usr/bin/env python3
"""The CPU backend's edge cases with their right values (issue 4,
"Numerics"), each a small ONNX model compiled by gatec into a library, run
with gatec-run and compared with an independent reference:

- a fully masked attention row gives zeros (numpy: gated_reference.py);
- Softmax-11 (2-D coercion at axis 1) vs Softmax-13 (axis -1) on a rank-3
  input give their different results (onnxruntime);
- Gelu-20 approximate="tanh" vs "none" (onnxruntime);
- LayerNormalization with axis -1 and with the same positive axis agree,
  and match onnxruntime;
- a decomposed LayerNorm with epsilon 1.0 uses 1.0 (numpy);
- fp32 x - (x + 1) is not folded to -1: for x = 1e8 it is 0 (numpy).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import gated_reference as ref  # noqa: E402

F = TensorProto.FLOAT
results = []


def model(nodes, inputs, outputs, opset, inits=()):
    g = helper.make_graph(nodes, "edge", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    return m


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def run(args, work, name, m, feeds):
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    lib = os.path.join(work, name + ".so")
    c = subprocess.run([args.gatec, path, "-o", lib], capture_output=True, text=True)
    if c.returncode:
        raise RuntimeError("gatec: " + c.stderr.strip())
    cmd = [args.gatec_run, lib]
    for i, (k, v) in enumerate(feeds.items()):
        p = os.path.join(work, "%s_in%d.npy" % (name, i))
        np.save(p, v)
        cmd.append("--input=%s=@%s" % (k, p))
    outs = []
    for o in m.graph.output:
        p = os.path.join(work, "%s_%s.npy" % (name, o.name))
        cmd.append("--output=%s=@%s" % (o.name, p))
        outs.append(p)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("gatec-run: " + r.stderr.strip())
    return [np.load(p) for p in outs]


def check(name, got, want, tol=1e-5):
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want)))) if want.size else 0.0
    ok = bool(np.all(np.isfinite(got))) and err <= tol
    results.append(ok)
    print("%s %-44s max scaled error %.2e" % ("ok  " if ok else "FAIL", name, err))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gatec-edge-")
    rng = np.random.default_rng(11)
    x3 = rng.standard_normal((2, 3, 4)).astype(np.float32)

    # Fully masked row: ONNX Attention-23 with a boolean mask (true =
    # attend) whose row 1 is all false.
    q = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
    mask = np.array([[True, False, True], [False, False, False], [True, True, True]])
    m = model([helper.make_node("Attention", ["q", "k", "v", "m"], ["y"])],
              [vi("q", [1, 2, 3, 4]), vi("k", [1, 2, 3, 4]), vi("v", [1, 2, 3, 4]),
               helper.make_tensor_value_info("m", TensorProto.BOOL, [3, 3])],
              [vi("y", [1, 2, 3, 4])], 23)
    y, = run(args, work, "masked_row", m, {"q": q, "k": q, "v": q, "m": mask})
    want = ref.attention(q, q, q, 0.5, mask=mask)
    check("attention: fully masked row gives zeros", y, want)
    results.append(bool(np.all(y[:, :, 1] == 0)))

    # Softmax-11 vs -13 on rank 3.
    for opset in (11, 13):
        m = model([helper.make_node("Softmax", ["x"], ["y"])], [vi("x", [2, 3, 4])],
                  [vi("y", [2, 3, 4])], opset)
        want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x3})[0]
        y, = run(args, work, "softmax%d" % opset, m, {"x": x3})
        check("Softmax-%d on rank 3 (onnxruntime)" % opset, y, want)
    s11 = np.exp(x3.reshape(2, 12)); s11 = (s11 / s11.sum(1, keepdims=True)).reshape(2, 3, 4)
    s13 = np.exp(x3); s13 = s13 / s13.sum(-1, keepdims=True)
    results.append(bool(np.abs(s11 - s13).max() > 1e-2))  # they do differ

    # Gelu tanh vs erf.
    for approx in ("none", "tanh"):
        m = model([helper.make_node("Gelu", ["x"], ["y"], approximate=approx)],
                  [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], 20)
        want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x3 * 3})[0]
        y, = run(args, work, "gelu_" + approx, m, {"x": x3 * 3})
        check("Gelu approximate=%s (onnxruntime)" % approx, y, want)

    # LayerNormalization axis -1 vs 2.
    w = helper.make_tensor("w", F, [4], rng.standard_normal(4).tolist())
    b = helper.make_tensor("b", F, [4], rng.standard_normal(4).tolist())
    outs = []
    for axis in (-1, 2):
        m = model([helper.make_node("LayerNormalization", ["x", "w", "b"], ["y"], axis=axis, epsilon=1e-5)],
                  [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], 17, [w, b])
        want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x3})[0]
        y, = run(args, work, "ln_axis%d" % (axis + 1), m, {"x": x3})
        check("LayerNormalization axis=%d (onnxruntime)" % axis, y, want)
        outs.append(y)
    results.append(bool(np.array_equal(outs[0], outs[1])))

    # Decomposed LayerNorm with epsilon 1.0.
    c = lambda n, v: helper.make_tensor(n, F, [], [v])
    ax = helper.make_tensor("ax", TensorProto.INT64, [1], [-1])
    nodes = [helper.make_node("ReduceMean", ["x", "ax"], ["mu"]),
             helper.make_node("Sub", ["x", "mu"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["d2"]),
             helper.make_node("ReduceMean", ["d2", "ax"], ["var"]),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["n"]),
             helper.make_node("Mul", ["n", "w"], ["y"])]
    m = model(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], 18,
              [ax, c("two", 2.0), c("eps", 1.0), w])
    wv = onnx.numpy_helper.to_array(w)
    y, = run(args, work, "ln_eps1", m, {"x": x3})
    check("decomposed LayerNorm with epsilon 1.0 (numpy)", y, ref.layer_norm(x3, wv, None, 1.0))

    # x - (x + 1) is not folded.
    m = model([helper.make_node("Add", ["x", "one"], ["a"]), helper.make_node("Sub", ["x", "a"], ["y"])],
              [vi("x", [3])], [vi("y", [3])], 17, [c("one", 1.0)])
    xs = np.array([1e8, 1.0, -3.5], np.float32)
    y, = run(args, work, "no_fold", m, {"x": xs})
    want = xs - (xs + np.float32(1))  # fp32: 0 for 1e8, -1 otherwise
    check("fp32 x - (x + 1) not folded (numpy fp32)", y, want.astype(np.float64), tol=0)

    print("edge cases: %d checks, %d failures" % (len(results), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
