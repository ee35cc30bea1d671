#!/usr/bin/env python3
"""Attention with NaN inputs and fully masked rows, for
test/Execution/attention-nan.test.

usage: make_attention_nan_models.py OUTDIR
  attn23.onnx   ONNX Attention-23, causal, q/k/v [1, 2, T, 8] (T symbolic)
  sdpa.onnx     the unfused pattern MatMul(q, kᵀ)·scale + mask → Softmax →
                MatMul(·, v) with a float mask [T, T] (gatec raises it)
  <model>_<case>_in<k>.npy, <model>_<case>_ref<k>.npy: inputs and the
  reference. The reference is onnxruntime's output, except for the
  fully masked rows of sdpa (every score -inf), where ONNX's Softmax gives
  0/0 = NaN and gatec's attention gives zeros (GatedOps.td, gated.attention):
  there the reference is 0, computed here.
  cases: qnan (a NaN in one query row: that row is NaN, the others finite),
  knan (a NaN in key 2 of head 0: the rows that attend it are NaN; with
  attn23's causal flag rows 0 and 1 do not and are finite, with sdpa's
  additive mask NaN + -inf is NaN in every row, as in onnxruntime), vnan
  (a NaN in value 4 of head 1: P·V multiplies it by p = 0 in the rows that
  mask it, and 0·NaN is NaN, so its head is NaN, as in onnxruntime),
  masked (sdpa: row 2 fully masked by -inf), t1 (sequence 1).
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
rng = np.random.default_rng(3)
vi = helper.make_tensor_value_info
D = 8


def save(name, tag, model_path, inputs, fix=None):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
    for k, a in enumerate(inputs):
        np.save(os.path.join(out, f"{name}_{tag}_in{k}.npy"), a)
    ref = sess.run(None, feeds)[0]
    if fix:
        ref = fix(ref)
    np.save(os.path.join(out, f"{name}_{tag}_ref0.npy"), ref)
    return ref


qkv = [vi(n, TP.FLOAT, [1, 2, "T", D]) for n in "qkv"]
y = [vi("y", TP.FLOAT, [1, 2, "T", D])]
m = helper.make_model(helper.make_graph(
    [helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1, name="attn")],
    "attn23", qkv, y), opset_imports=[helper.make_opsetid("", 23)])
onnx.checker.check_model(m)
p23 = os.path.join(out, "attn23.onnx")
onnx.save(m, p23)

nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
         helper.make_node("MatMul", ["q", "kt"], ["s0"]),
         helper.make_node("Mul", ["s0", "scale"], ["s1"]),
         helper.make_node("Add", ["s1", "mask"], ["s"]),
         helper.make_node("Softmax", ["s"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["y"])]
m = helper.make_model(helper.make_graph(
    nodes, "sdpa", qkv + [vi("mask", TP.FLOAT, ["T", "T"])], y,
    [numpy_helper.from_array(np.array(D ** -0.5, np.float32), "scale")]),
    opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
psd = os.path.join(out, "sdpa.onnx")
onnx.save(m, psd)


def x(t):
    return rng.standard_normal((1, 2, t, D)).astype(np.float32)


def causal(t):
    a = np.zeros((t, t), np.float32)
    a[np.triu_indices(t, 1)] = -np.inf
    return a


T = 6
q, k, v = x(T), x(T), x(T)
qn = q.copy(); qn[0, 1, 3, 5] = np.nan
kn = k.copy(); kn[0, 0, 2, 1] = np.nan
vn = v.copy(); vn[0, 1, 4, 0] = np.nan
def attend_rows01(r):
    """attn23 with a NaN in key 2: its causal mask is a flag, and a masked
    score is replaced by -inf (not added), so rows 0 and 1, which do not
    attend key 2, are finite (onnxruntime adds the mask: NaN everywhere).
    They are recomputed here in float64."""
    r = r.copy()
    for t in (0, 1):
        s = (q[0, 0, t] @ kn[0, 0, :t + 1].T) * D ** -0.5
        p = np.exp(s - s.max())
        r[0, 0, t] = (p / p.sum()) @ v[0, 0, :t + 1]
    return r


for name, path, extra in [("attn23", p23, []), ("sdpa", psd, [causal(T)])]:
    r = save(name, "qnan", path, [qn, k, v] + extra)
    assert np.isnan(r[0, 1, 3]).all() and not np.isnan(np.delete(r, 3, axis=2)).any()
    # A float mask is added to the scores: NaN + -inf is NaN in every row.
    r = save(name, "knan", path, [q, kn, v] + extra,
             attend_rows01 if name == "attn23" else None)
    assert np.isnan(r[0, 0, 2:]).all() and not np.isnan(r[0, 1]).any()
    # P·V: a masked key's p is 0, and 0·NaN is NaN (as onnxruntime).
    r = save(name, "vnan", path, [q, k, vn] + extra)
    assert np.isnan(r[0, 1, :, 0]).all() and not np.isnan(r[0, 0]).any()
    save(name, "t1", path, [x(1), x(1), x(1)] + ([causal(1)] if extra else []))

mask = causal(T)
mask[2, :] = -np.inf


def zero_row2(r):
    assert np.isnan(r[:, :, 2]).all()  # ONNX's Softmax: 0/0
    r = r.copy()
    r[:, :, 2] = 0
    return r


save("sdpa", "masked", psd, [q, k, v, mask], zero_row2)
