#!/usr/bin/env python3
"""Runs onnxruntime contrib ops (domain com.microsoft) that gatec imports and
compares gatec's compiled library with onnxruntime running the same model.

The ops and their semantics are those of onnxruntime's op schemas
(onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()):
  CausalConvWithState  stateful causal depthwise conv1d (default layout:
                       channels first, ndim 1, no state window), imported as
                       Concat + Conv + activation + Slice
  GatedRMSNorm         RMSNormalization over groups of C times silu/sigmoid(gate)
  LinearAttention      LinearAttention-27 plus state_window (only 0)
  GatedDeltaNet        uniform packing, separate Q/K/V, equal head counts:
                       LinearAttention-27 between reshapes, the softplus gate
                       and sigmoid beta computed first

Each case is written as an ONNX backend test directory (model.onnx,
test_data_set_0 with random inputs and onnxruntime's outputs) and run with
`gatec-run --onnx-test-dir` (compile, run, |got - want| <= 1e-4 + 1e-4 |want|).

usage: run_contrib_ops.py [--gatec-run PATH] [--case NAME] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as oh
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
rng = np.random.default_rng(20261130)
cases = []


def case(name, node, inputs, outputs, dims=None):
    """inputs: name -> array; outputs: names; dims: name -> ONNX dims
    (strings are symbolic) where the model declares other than the shape."""
    cases.append((name, node, inputs, outputs, dims or {}))


def f32(*shape, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale, np.float32)


def MS(op, ins, outs, **attrs):
    return oh.make_node(op, ins, outs, domain="com.microsoft", **attrs)


# --- CausalConvWithState: [B, C, T] input, [C, 1, k] weight --------------------
case("ccws_silu_bias_past",
     MS("CausalConvWithState", ["x", "w", "b", "s"], ["y", "st"], activation="silu"),
     {"x": f32(2, 8, 7), "w": f32(8, 1, 4), "b": f32(8), "s": f32(2, 8, 3)}, ["y", "st"])
case("ccws_no_past_no_bias",
     MS("CausalConvWithState", ["x", "w"], ["y", "st"]),
     {"x": f32(1, 6, 5), "w": f32(6, 1, 4)}, ["y", "st"])
case("ccws_swish_dilation2",
     MS("CausalConvWithState", ["x", "w", "", "s"], ["y", "st"], activation="swish", dilation=2),
     {"x": f32(2, 4, 9), "w": f32(4, 1, 3), "s": f32(2, 4, 4)}, ["y", "st"])
case("ccws_decode_step_symbolic",  # T = 1 decode with a symbolic batch
     MS("CausalConvWithState", ["x", "w", "b", "s"], ["y", "st"], activation="silu"),
     {"x": f32(3, 16, 1), "w": f32(16, 1, 4), "b": f32(16), "s": f32(3, 16, 3)}, ["y", "st"],
     dims={"x": ["B", 16, 1], "s": ["B", 16, 3]})
case("ccws_kernel2",
     MS("CausalConvWithState", ["x", "w", "b"], ["y", "st"], activation="silu"),
     {"x": f32(2, 8, 6), "w": f32(8, 1, 2), "b": f32(8)}, ["y", "st"])


# --- GatedRMSNorm: X [..., H * C], scale [C], gate like X -----------------------
case("grms_silu_per_head",
     MS("GatedRMSNorm", ["x", "s", "z"], ["y"]),
     {"x": f32(2, 3, 16), "s": f32(8), "z": f32(2, 3, 16)}, ["y"])
case("grms_sigmoid_whole_row_eps",
     MS("GatedRMSNorm", ["x", "s", "z"], ["y"], activation="sigmoid", epsilon=1e-3),
     {"x": f32(4, 12, scale=0.1), "s": f32(12), "z": f32(4, 12)}, ["y"])
case("grms_swish_symbolic_seq",
     MS("GatedRMSNorm", ["x", "s", "z"], ["y"], activation="swish"),
     {"x": f32(1, 5, 32), "s": f32(8), "z": f32(1, 5, 32)}, ["y"],
     dims={"x": [1, "T", 32], "z": [1, "T", 32]})


# --- LinearAttention: [B, T, H*D] packed ----------------------------------------
def la(name, rule, hq, hkv, dk, dv, past=True, decay_per_key=False, t=5, **attrs):
    b = 2
    ins = {"q": f32(b, t, hq * dk, scale=0.5), "k": f32(b, t, hkv * dk, scale=0.5),
           "v": f32(b, t, hkv * dv)}
    names = ["q", "k", "v", "s" if past else ""]
    if past:
        ins["s"] = f32(b, hkv, dk, dv, scale=0.3)
    if rule in ("gated", "gated_delta"):
        w = hkv * dk if decay_per_key else hkv
        ins["g"] = -np.abs(f32(b, t, w, scale=0.5)) - 0.05
        names.append("g")
    else:
        names.append("")
    if rule in ("delta", "gated_delta"):
        ins["beta"] = (1 / (1 + np.exp(-f32(b, t, hkv)))).astype(np.float32)
        names.append("beta")
    while names and names[-1] == "":
        names.pop()
    if rule in ("delta", "gated_delta"):  # keys L2-normalised per head
        k = ins["k"].reshape(b, t, hkv, dk)
        ins["k"] = (k / np.linalg.norm(k, axis=-1, keepdims=True)).reshape(b, t, hkv * dk)
    case(name, MS("LinearAttention", names, ["y", "st"], q_num_heads=hq, kv_num_heads=hkv,
                  update_rule=rule, **attrs), ins, ["y", "st"])


la("la_linear_gqa_no_past", "linear", 4, 2, 8, 8, past=False)
la("la_gated_per_key_decay", "gated", 2, 2, 8, 4, decay_per_key=True)
la("la_delta", "delta", 2, 2, 8, 8)
la("la_gated_delta_scale", "gated_delta", 2, 2, 16, 8, scale=0.2)
la("la_gated_delta_state_window0", "gated_delta", 2, 2, 8, 8, t=1, state_window=0)


# --- GatedDeltaNet: token-major [N, H, D] (N = B T) or [B, T, H, D] ------------
def gdn(name, rule, b, t, h, dk, dv, rank4=False, state=True, per_key=False, **attrs):
    lead = (b, t) if rank4 else (b * t,)
    k = f32(*lead, h, dk)
    ins = {"q": f32(*lead, h, dk, scale=0.5), "k": k / np.linalg.norm(k, axis=-1, keepdims=True),
           "v": f32(*lead, h, dv)}
    names = ["q", "k", "v", ""]
    gate = attrs.get("gate_activation", "none")
    if rule in ("gated", "gated_delta"):
        ins["g"] = f32(*lead, h) if gate == "softplus" else \
            -np.abs(f32(*lead, h, *([dk] if per_key else []), scale=0.5)) - 0.05
        names.append("g")
    else:
        names.append("")
    if rule in ("delta", "gated_delta"):
        bv = f32(*lead, h)
        ins["beta"] = bv if attrs.get("beta_activation") == "sigmoid" else 1 / (1 + np.exp(-bv))
        names.append("beta")
    else:
        names.append("")
    names.append("s" if state else "")
    if state:
        ins["s"] = f32(b, h, dv, dk, scale=0.3)
    if gate == "softplus":
        ins["a_log"], ins["dt_bias"] = f32(h, scale=0.5), f32(h, scale=0.5)
        names += ["a_log", "dt_bias"]
    while names and names[-1] == "":
        names.pop()
    ins = {n: np.asarray(a, np.float32) for n, a in ins.items()}
    case(name, MS("GatedDeltaNet", names, ["y", "fs"], update_rule=rule, **attrs), ins, ["y", "fs"])


gdn("gdn_gated_delta_tokens", "gated_delta", 2, 5, 2, 8, 8)
gdn("gdn_softplus_gate_sigmoid_beta", "gated_delta", 2, 4, 4, 8, 16,
    gate_activation="softplus", beta_activation="sigmoid")
gdn("gdn_rank4_gated_per_key_no_state", "gated", 2, 3, 2, 8, 4, rank4=True, state=False,
    per_key=True)
gdn("gdn_delta_scale", "delta", 1, 6, 2, 16, 8, scale=0.125)
gdn("gdn_linear_decode", "linear", 3, 1, 2, 8, 8)


def build(name, node, inputs, outputs, dims):
    vis = []
    for n in node.input:
        if n:
            a = inputs[n]
            vis.append(oh.make_tensor_value_info(n, TP.FLOAT, dims.get(n, list(a.shape))))
    outs = [oh.make_tensor_value_info(o, TP.FLOAT, None) for o in outputs]
    g = oh.make_graph([node], name, vis, outs)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 23),
                                        oh.make_opsetid("com.microsoft", 1)])
    m.ir_version = 10
    return m


def run_case(c, gatec_run, tmp):
    name, node, inputs, outputs, dims = c
    m = build(*c)
    d = os.path.join(tmp, name)
    ds = os.path.join(d, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {n: inputs[n] for n in node.input if n}
    want = sess.run(outputs, feeds)
    for i, n in enumerate(n for n in node.input if n):
        with open(os.path.join(ds, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(inputs[n], n).SerializeToString())
    for i, (n, w) in enumerate(zip(outputs, want)):
        with open(os.path.join(ds, "output_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(w), n).SerializeToString())
    r = subprocess.run([gatec_run, "--onnx-test-dir=" + d], capture_output=True, text=True,
                       timeout=300)
    errs = [float(e) for e in re.findall(r"max \|error\| (\S+)", r.stdout + r.stderr)]
    msg = (r.stderr.strip().splitlines() or [""])[0] if r.returncode else ""
    return r.returncode == 0, max(errs) if errs else float("nan"), msg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--case")
    ap.add_argument("--keep")
    args = ap.parse_args()
    selected = [c for c in cases if not args.case or c[0] == args.case]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in selected:
            ok, err, msg = run_case(c, args.gatec_run, args.keep or tmp)
            failures += not ok
            print("%s %-32s max |error| %.2e %s" % ("ok  " if ok else "FAIL", c[0], err, msg))
    print("com.microsoft ops vs onnxruntime: %d cases, %d failures" % (len(selected), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
