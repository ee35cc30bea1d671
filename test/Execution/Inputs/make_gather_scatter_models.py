#!/usr/bin/env python3
"""GatherND, ScatterND and ScatterElements over symbolic batch and sequence
dims, their inputs and onnxruntime's outputs (onnx.reference where
onnxruntime fails a case it should run; test/Execution/gather-scatter.test).

usage: make_gather_scatter_models.py OUTDIR
  gnd_batch.onnx  GatherND batch_dims=1: x[b, s, 6] at rows i[b, t, 1] ->
                  [b, t, 6]. Cases: one (1, 1, 1), long (3, 7, 5; negative
                  rows), high (a row s), low (a row -s - 1).
  gnd_pairs.onnx  GatherND of (batch, position) pairs i[n, 2] from x[b, s, 4]
                  -> [n, 4]. Cases: one, long (negative pairs), high (a
                  position s: data dim 1).
  snd_<r>.onnx    ScatterND with reduction r (none, add, mul, max, min):
                  u[n, 4] into x[b, s, 4] at pairs i[n, 2]; the reductions'
                  pairs repeat. Cases: one (1, 1, n = 1), long (2, 9, n = 6;
                  negative pairs). snd_none (u[nu, 4]: its rows checked
                  against n at run time) also: high (a position s), shapes
                  (u of 5 rows for 6 pairs).
  se_add.onnx     ScatterElements axis=-1 reduction add, x[b, s], i and u
                  [b, k] (negative and repeated indices). Cases: one (1, 1,
                  1), long (3, 8, 5), high (an index s: data dim 1), low.
  se_none.onnx    ScatterElements axis=-2 reduction none, x[b, s, 3], i and
                  u [b, k, 3] (distinct indices per line). Cases: one, long.
  se_int.onnx     ScatterElements axis=1 reduction max on int64 data with
                  int32 indices, x[b, s], i and u [bi, k]. Cases: one, long,
                  big (i of more rows than x: indices larger than data).
  snd_int.onnx    ScatterND reduction mul on int64 data [b, s], i[n, 1].
                  Cases: one, long.
  snd_const.onnx  ScatterND into x[4, 3] at the constant rows [[1], [4]]
                  (a compile error).
  <model>_<case>_in<k>.npy, <model>_<case>_ref.npy (no ref: the run fails)
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
ort.set_default_logger_severity(4)  # the failing runs are expected
os.makedirs(out, exist_ok=True)
vi = helper.make_tensor_value_info
F, I64, I32 = TP.FLOAT, TP.INT64, TP.INT32
rng = np.random.default_rng(0)
models = {}


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def save(name, node, inputs, output, inits=()):
    g = helper.make_graph([node], name, inputs, [output], initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + ".onnx"))
    models[name] = m


def case(name, tag, *arrays, ok=True):
    m = models[name]
    feeds = {}
    for k, (v, a) in enumerate(zip(m.graph.input, arrays)):
        np.save(os.path.join(out, "%s_%s_in%d.npy" % (name, tag, k)), a)
        feeds[v.name] = a
    sess = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    try:
        (r,) = sess.run(None, feeds)
    except Exception as e:  # out of range: onnxruntime fails the run too
        if ok:
            (r,) = ReferenceEvaluator(m).run(None, feeds)
            print("%s %s: onnx.reference (onnxruntime: %s)"
                  % (name, tag, str(e).splitlines()[0][:80]))
        else:
            return
    else:
        assert ok, "%s %s: onnxruntime runs a case meant to fail" % (name, tag)
    np.save(os.path.join(out, "%s_%s_ref.npy" % (name, tag)), r)


def ints(*v, shape=None, dtype=np.int64):
    a = np.array(v, dtype)
    return a.reshape(shape) if shape else a


# GatherND, batch_dims=1: row i[b, t, 0] of batch b.
save("gnd_batch", helper.make_node("GatherND", ["x", "i"], ["y"], name="gnd",
                                   batch_dims=1),
     [vi("x", F, ["b", "s", 6]), vi("i", I64, ["b", "t", 1])],
     vi("y", F, ["b", "t", 6]))
case("gnd_batch", "one", randn(1, 1, 6), ints(0, shape=(1, 1, 1)))
case("gnd_batch", "long", randn(3, 7, 6),
     rng.integers(-7, 7, (3, 5, 1)).astype(np.int64))
case("gnd_batch", "high", randn(3, 7, 6), ints(*([0] * 14 + [7]), shape=(3, 5, 1)),
     ok=False)
case("gnd_batch", "low", randn(3, 7, 6), ints(*([-8] + [0] * 14), shape=(3, 5, 1)),
     ok=False)

# GatherND of (batch, position) pairs.
save("gnd_pairs", helper.make_node("GatherND", ["x", "i"], ["y"], name="pairs"),
     [vi("x", F, ["b", "s", 4]), vi("i", I64, ["n", 2])], vi("y", F, ["n", 4]))
case("gnd_pairs", "one", randn(1, 1, 4), ints(0, 0, shape=(1, 2)))
case("gnd_pairs", "long", randn(2, 9, 4),
     ints(0, 0, 1, 8, -1, -9, -2, 4, 1, -1, 0, 3, 1, 2, shape=(7, 2)))
case("gnd_pairs", "high", randn(2, 9, 4), ints(0, 0, 1, 9, shape=(2, 2)), ok=False)

# ScatterND of rows u[n, 4] at (batch, position) pairs, each reduction.
for red in ("none", "add", "mul", "max", "min"):
    name = "snd_" + red
    save(name, helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="snd",
                                reduction=red),
         [vi("x", F, ["b", "s", 4]), vi("i", I64, ["n", 2]),
          vi("u", F, ["nu" if red == "none" else "n", 4])],
         vi("y", F, ["b", "s", 4]))
    case(name, "one", randn(1, 1, 4), ints(0, 0, shape=(1, 2)), randn(1, 4))
    pairs = (ints(0, 0, 1, 8, -1, -9, -2, 4, 1, -1, 0, 3, shape=(6, 2))
             if red == "none" else  # the reductions' pairs repeat
             ints(0, 0, 1, 8, -2, 0, 1, -1, 0, 3, 0, 0, shape=(6, 2)))
    case(name, "long", randn(2, 9, 4), pairs, randn(6, 4))
case("snd_none", "high", randn(2, 9, 4), ints(0, 0, 1, 9, shape=(2, 2)),
     randn(2, 4), ok=False)
case("snd_none", "shapes", randn(2, 9, 4), ints(*range(12), shape=(6, 2)) % 2,
     randn(5, 4), ok=False)

# ScatterElements along the last axis (axis -1), reduction add.
save("se_add", helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="se",
                                axis=-1, reduction="add"),
     [vi("x", F, ["b", "s"]), vi("i", I64, ["b", "k"]), vi("u", F, ["b", "k"])],
     vi("y", F, ["b", "s"]))
case("se_add", "one", randn(1, 1), ints(-1, shape=(1, 1)), randn(1, 1))
case("se_add", "long", randn(3, 8),
     ints(0, -1, 7, -8, 0, 3, 3, -5, 2, 1, -1, -1, 6, 0, 4, shape=(3, 5)), randn(3, 5))
case("se_add", "high", randn(3, 8), ints(*([0] * 14 + [8]), shape=(3, 5)),
     randn(3, 5), ok=False)
case("se_add", "low", randn(3, 8), ints(*([-9] + [0] * 14), shape=(3, 5)),
     randn(3, 5), ok=False)

# ScatterElements along axis -2 of a rank-3 tensor, reduction none.
save("se_none", helper.make_node("ScatterElements", ["x", "i", "u"], ["y"],
                                 name="se3", axis=-2),
     [vi("x", F, ["b", "s", 3]), vi("i", I64, ["b", "k", 3]),
      vi("u", F, ["b", "k", 3])], vi("y", F, ["b", "s", 3]))
case("se_none", "one", randn(1, 1, 3), ints(0, -1, 0, shape=(1, 1, 3)), randn(1, 1, 3))
perm = np.stack([np.stack([rng.permutation(7)[:4] - 7 * (c % 2) for c in range(3)], -1)
                 for _ in range(2)]).astype(np.int64)
case("se_none", "long", randn(2, 7, 3), perm, randn(2, 4, 3))

# ScatterElements on int64 data with int32 indices, reduction max.
save("se_int", helper.make_node("ScatterElements", ["x", "i", "u"], ["y"],
                                name="se_int", axis=1, reduction="max"),
     [vi("x", I64, ["b", "s"]), vi("i", I32, ["bi", "k"]), vi("u", I64, ["bi", "k"])],
     vi("y", I64, ["b", "s"]))
big = lambda *s: rng.integers(-1000, 1000, s).astype(np.int64)
case("se_int", "one", big(1, 1), ints(0, shape=(1, 1), dtype=np.int32), big(1, 1))
case("se_int", "long", big(4, 6),
     rng.integers(-6, 6, (3, 5)).astype(np.int32), big(3, 5))
case("se_int", "big", big(2, 6), np.zeros((3, 2), np.int32), big(3, 2), ok=False)

# ScatterND on int64 data, reduction mul, whole rows.
save("snd_int", helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="snd_int",
                                 reduction="mul"),
     [vi("x", I64, ["b", "s"]), vi("i", I64, ["n", 1]), vi("u", I64, ["n", "s"])],
     vi("y", I64, ["b", "s"]))
small = lambda *s: rng.integers(-9, 9, s).astype(np.int64)
case("snd_int", "one", small(1, 1), ints(0, shape=(1, 1)), small(1, 1))
case("snd_int", "long", small(3, 5), ints(2, -1, 0, -3, shape=(4, 1)), small(4, 5))

# ScatterND at constant rows out of range of a static dim.
save("snd_const", helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="rows"),
     [vi("x", F, [4, 3]), vi("u", F, [2, 3])], vi("y", F, [4, 3]),
     [numpy_helper.from_array(ints(1, 4, shape=(2, 1)), "i")])
