#!/usr/bin/env python3
"""Pad and Mod models over symbolic dims, their inputs and references
(test/Execution/pad-mod.test): onnxruntime's outputs for Pad (the ONNX
reference's np.pad takes no negative pads) and integer Mod, the ONNX
reference's for float Mod (fmod = 0 on floats is Mod-28, opset 28).

usage: make_pad_mod_models.py OUTDIR
  pad_const.onnx     Pad(x[b, s, 4], constant pads [0, 1, -1, 0, 2, 1],
                     constant_value [1.5]): cases one (1, 1, 4), long
                     (2, 7, 4)
  pad_<mode>.onnx    Pad(x[b, s, 5], pads[4] read at run time, axes [1, -1])
                     for mode constant (with a run-time constant_value),
                     reflect, edge, wrap. Cases: one (1, 1, 5), long
                     (2, 6, 5), crop (pads that crop dim 1 to nothing and
                     pad it by 1: constant only), and the error cases
                     negative (a result dim < 0), empty (the crop case in
                     the other modes), far (a reflect pad = the dim)
  pad_axes.onnx      Pad(x[b, s, 3], pads, axes both read at run time):
                     cases ok (axes [-1, 0]), axis (axes [3]: out of range),
                     length (4 pads for 1 axis)
  mod_int.onnx       Mod(a[b, n], c[n]) i32 with fmod 0 (y0) and 1 (y1):
                     cases one (1, 1), long (3, 8: negative operands,
                     INT_MIN % -1), zero (a divisor of 0)
  mod_float.onnx     the same in f32 (opset 28), with +-0, infinities, NaN
  mod_zero.onnx      Mod(a, [2, 0]): a constant divisor of 0
  <model>_<case>_in<k>.npy, <model>_<case>_ref<k>.npy
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
F = TP.FLOAT
rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(name, nodes, inputs, outputs, inits, cases, opset=21, ref="ort"):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    if not any(ok for _, _, ok in cases):
        run = None
    elif ref == "ort":
        sess = ort.InferenceSession(m.SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        run = lambda feeds: sess.run(None, feeds)  # noqa: E731
    else:
        run = lambda feeds: ReferenceEvaluator(m).run(None, feeds)  # noqa: E731
    for tag, arrays, ok in cases:
        for k, a in enumerate(arrays):
            np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        if ok:
            rs = run({i.name: a for i, a in zip(inputs, arrays)})
            for k, r in enumerate(rs):
                np.save(os.path.join(out, "%s_%s_ref%d.npy" % (name, tag, k)), r)


# Pad, constant pads and value: the last dim cropped at its start.
save("pad_const",
     [helper.make_node("Pad", ["x", "p", "v"], ["y"], name="pad", mode="constant")],
     [vi("x", F, ["b", "s", 4])], [vi("y", F, ["b", "s1", 4])],
     [numpy_helper.from_array(np.array([0, 1, -1, 0, 2, 1], np.int64), "p"),
      numpy_helper.from_array(np.array([1.5], np.float32), "v")],
     [("one", [randn(1, 1, 4)], True), ("long", [randn(2, 7, 4)], True)])

# Pad with pads read at run time, in each mode.
axes = numpy_helper.from_array(np.array([1, -1], np.int64), "axes")
for mode in ["constant", "reflect", "edge", "wrap"]:
    ins = ["x", "pads", "v" if mode == "constant" else "", "axes"]
    inputs = [vi("x", F, ["b", "s", 5]), vi("pads", TP.INT64, [4])]
    if mode == "constant":
        inputs.append(vi("v", F, []))
    cases = []

    def case(tag, x, pads, ok):
        arrays = [x, np.array(pads, np.int64)]
        if mode == "constant":
            arrays.append(np.array(-2.0, np.float32))
        cases.append((tag, arrays, ok))

    # [begin dim 1, begin dim 2, end dim 1, end dim 2]
    case("one", randn(1, 1, 5), [0, 2, 0, -1], True)
    case("long", randn(2, 6, 5), [2, -1, -3, 3], True)
    case("negative", randn(1, 2, 5), [-2, 0, -1, 0], False)
    case("crop" if mode == "constant" else "empty", randn(1, 2, 5),
         [-2, 0, 1, 0], mode == "constant")
    if mode == "reflect":
        case("far", randn(2, 3, 5), [3, 0, 0, 0], False)
    save("pad_" + mode,
         [helper.make_node("Pad", ins, ["y"], name="pad", mode=mode)],
         inputs, [vi("y", F, ["b", "s1", "c1"])], [axes], cases)

# Pad with axes read at run time.
save("pad_axes",
     [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="pad")],
     [vi("x", F, ["b", "s", 3]), vi("pads", TP.INT64, ["p"]),
      vi("axes", TP.INT64, ["m"])],
     [vi("y", F, ["b1", "s1", "c1"])], [],
     [("ok", [randn(2, 3, 3), np.array([1, 0, 0, 2], np.int64),
              np.array([-1, 0], np.int64)], True),
      ("axis", [randn(2, 3, 3), np.array([1, 1], np.int64),
                np.array([3], np.int64)], False),
      ("length", [randn(2, 3, 3), np.array([1, 1, 1, 1], np.int64),
                  np.array([0], np.int64)], False)])


# Mod, integers: onnxruntime's Python-style (fmod 0) and C-style (fmod 1)
# remainders; INT_MIN % -1 is 0 (onnxruntime itself traps there, so that
# case's references are computed here).
def int_mod(a, c):
    ao, co = a.astype(object), c.astype(object)
    py = np.vectorize(lambda x, y: x % y)(ao, co)
    cm = np.vectorize(lambda x, y: abs(x) % abs(y) * (1 if x >= 0 else -1))(ao, co)
    return py.astype(a.dtype), cm.astype(a.dtype)


I32 = TP.INT32
imin = np.iinfo(np.int32).min
mod_nodes = [helper.make_node("Mod", ["a", "c"], ["y0"], name="mod0", fmod=0),
             helper.make_node("Mod", ["a", "c"], ["y1"], name="mod1", fmod=1)]
a_long = np.array([[7, -7, 7, -7, 0, imin, imin, 13],
                   [5, -5, 6, -6, -1, 3, 100, -100],
                   [imin, 2147483647, -3, 3, 9, -9, 1, -1]], np.int32)
c_long = np.array([3, 3, -3, -3, 5, -1, 7, -6], np.int32)
a_one, c_one = np.array([[-9]], np.int32), np.array([4], np.int32)
save("mod_int", mod_nodes, [vi("a", I32, ["b", "n"]), vi("c", I32, ["n"])],
     [vi("y0", I32, ["b", "n"]), vi("y1", I32, ["b", "n"])], [],
     [("zero", [a_long, np.array([3, 3, -3, 0, 5, -1, 7, -6], np.int32)], False)])
for tag, a, c in [("one", a_one, c_one), ("long", a_long, c_long)]:
    np.save(os.path.join(out, "mod_int_%s_in0.npy" % tag), a)
    np.save(os.path.join(out, "mod_int_%s_in1.npy" % tag), c)
    for k, r in enumerate(int_mod(a, c)):
        np.save(os.path.join(out, "mod_int_%s_ref%d.npy" % (tag, k)), r)
# The same, where onnxruntime does not trap, checks int_mod against it.
sess = ort.InferenceSession(onnx.load(os.path.join(out, "mod_int.onnx")).SerializeToString(),
                            providers=["CPUExecutionProvider"])
safe = c_long != -1
a_s, c_s = a_long[:, safe], c_long[safe]
for mine, theirs in zip(int_mod(a_s, c_s), sess.run(None, {"a": a_s, "c": c_s})):
    assert (mine == theirs).all(), (mine, theirs)

inf, nan = np.inf, np.nan
a_f = np.array([[-4.3, 7.2, 5.0, 4.3, -7.2, 8.0, 0.0, -0.0],
                [-3.0, 3.0, 1.0, inf, -inf, nan, 1.0, 2.5],
                [1e-3, -1e-3, 1e6, -1e6, 10.0, -10.0, 0.5, -0.5]], np.float32)
c_f = np.array([[2.1, -3.4, 8.0, -2.1, 3.4, 5.0, -2.0, 2.0],
                [inf, inf, -inf, 2.0, 2.0, 2.0, 0.0, nan],
                [7.0, 7.0, -3.0, 3.0, -0.25, 0.25, 1e-7, 1e-7]], np.float32)
save("mod_float", mod_nodes, [vi("a", F, ["b", "n"]), vi("c", F, ["b", "n"])],
     [vi("y0", F, ["b", "n"]), vi("y1", F, ["b", "n"])], [],
     [("one", [np.array([[-7.5]], np.float32), np.array([[2.0]], np.float32)], True),
      ("long", [a_f, c_f], True)], opset=28, ref="onnx")

save("mod_zero", [helper.make_node("Mod", ["a", "c"], ["y"], name="mod")],
     [vi("a", TP.INT64, ["n", 2])], [vi("y", TP.INT64, ["n", 2])],
     [numpy_helper.from_array(np.array([2, 0], np.int64), "c")], [])
