#!/usr/bin/env python3
"""Element-wise broadcasting of dynamic dims decided at run time.

ONNX (multidirectional) broadcasting lets a dynamic dim be 1 at run time
while the other operand's is N. Each model here (onnx.helper, symbolic dims
with distinct names) is compiled once by gatec into a library and run by
gatec-run at several shapes: one side 1 and the other N, both directions,
both 1, neither broadcasting; the outputs are compared with onnxruntime's
(1e-5). Sizes that are neither equal nor 1 must stop the run with gatec's
message (a cf.assert, which --lower-run-time-checks makes the run's error: gatec-run
exits 1 with the message, no signal).

The attention cases (a softmax attention raised to gated.attention, run as
the flash-attention kernel) give every operand dim that may broadcast its
own symbolic dim: the mask's four, the keys'/values' batch, the G1 gate's
batch and rows; each is run where it is 1 and where it is full.

The rest of the gated ops and fused kernels, written as the raising passes
recognise them (each case names the op `gatec --report=gates` shows, or
says it is not raised): GLU feed-forwards (SwiGLU, GEGLU, a fused [W|V]
projection cut by Slice or Split, biases [?] and [1]) on x of symbolic
batch and sequence; G2-G5 gates (sigmoid, ns_sigmoid, silu; multiply,
add) and G1 gates (token-major, headwise) whose gate input has its own
batch and sequence; GTrXL input/output/highway/sigtanh/gru, Flamingo,
ReZero and LayerScale residuals whose stream, branch and gate each have
their own batch and sequence (each 1 or full, the sequence 1 or 40);
RMSNorm and LayerNormalization (weights [D] and [?]); ONNX
LinearAttention-27 with beta, decay and past state of their own dims
(outputs y and the present state s, both compared); GEMMs whose bias or
element-wise consumers read [?] / [?, 1] operands (tile-and-fuse).

usage: run_dynamic_broadcast.py [--gatec PATH] [--gatec-run PATH] [--keep DIR]
                                [--gatec-flag FLAG]...
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F, B = TP.FLOAT, TP.BOOL
NP = {F: np.float32, B: np.bool_}


def model(nodes, inputs, outputs, consts=None, opset=17):
    """inputs: (name, elem type, dims with strings for symbolic ones)."""
    g = oh.make_graph(
        nodes, "g",
        [oh.make_tensor_value_info(n, t, d) for n, t, d in inputs],
        [oh.make_tensor_value_info(n, F, None) for n in outputs],
        [onnx.numpy_helper.from_array(v, k) for k, v in (consts or {}).items()
         if any(k in n.input for n in nodes)])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)])


def N(op, ins, out="y", **attrs):
    return oh.make_node(op, ins, [out], **attrs)


# name -> (model, [sizes of the symbolic dims, one dict per run]).
CASES = {
    # a dynamic dim against a static 5 (the scan models' bug)
    "add_dynamic_vs_static": (
        model([N("Add", ["a", "b"])], [("a", F, [2, "p"]), ("b", F, [2, 5])], ["y"]),
        [{"p": 1}, {"p": 5}]),
    # two unrelated dynamic dims: either side 1, both 1, neither
    "mul_dynamic_vs_dynamic": (
        model([N("Mul", ["a", "b"])], [("a", F, ["n", "p"]), ("b", F, ["n", "q"])], ["y"]),
        [{"n": 3, "p": 1, "q": 5}, {"n": 3, "p": 5, "q": 1},
         {"n": 3, "p": 1, "q": 1}, {"n": 3, "p": 5, "q": 5}]),
    # ranks differ; both dims of b may broadcast
    "sub_rank_differs": (
        model([N("Sub", ["a", "b"])], [("a", F, ["p"]), ("b", F, ["m", "q"])], ["y"]),
        [{"p": 1, "m": 2, "q": 4}, {"p": 4, "m": 1, "q": 1},
         {"p": 4, "m": 3, "q": 4}, {"p": 1, "m": 1, "q": 1}]),
    # three operands, the condition too
    "where_three_way": (
        model([N("Where", ["c", "x", "y0"])],
              [("c", B, ["r", 1]), ("x", F, ["q"]), ("y0", F, [1, "s"])], ["y"]),
        [{"r": 3, "q": 4, "s": 4}, {"r": 3, "q": 1, "s": 4},
         {"r": 3, "q": 4, "s": 1}, {"r": 1, "q": 1, "s": 1}]),
    # a chain: the broadcast output feeds another broadcast
    "chain_max_div": (
        model([N("Max", ["a", "b"], "t"), N("Div", ["t", "c"])],
              [("a", F, ["p", 4]), ("b", F, ["q", 4]), ("c", F, ["r", 1])], ["y"]),
        [{"p": 1, "q": 6, "r": 6}, {"p": 6, "q": 1, "r": 1},
         {"p": 6, "q": 6, "r": 1}, {"p": 1, "q": 1, "r": 6}]),
    # MatMul batch dims
    "matmul_batch": (
        model([N("MatMul", ["a", "b"])], [("a", F, ["p", 3, 4]), ("b", F, ["q", 4, 2])], ["y"]),
        [{"p": 1, "q": 5}, {"p": 5, "q": 1}, {"p": 5, "q": 5}]),
    # Expand of a dynamic dim to a constant shape
    "expand_dynamic": (
        model([N("Expand", ["a", "s"])], [("a", F, ["p"])], ["y"],
              {"s": np.array([3, 4], np.int64)}),
        [{"p": 1}, {"p": 4}]),
    # a gate x * sigmoid(g) (raised to gated.gate) whose gate is headwise
    # ([.., 1]) or elementwise at run time
    "gate_dynamic_last": (
        model([N("Sigmoid", ["g"], "s"), N("Mul", ["x", "s"])],
              [("x", F, [2, 3, 8]), ("g", F, [2, 3, "h"])], ["y"]),
        [{"h": 1}, {"h": 8}]),
}


def attention(mask=None, kv=("b", 2, "s", 4), gate=None, causal=False, q=("b", 2, "t", 4),
              rep=None, trilu=None):
    """Softmax attention written out as exporters write it (Transpose,
    MatMul, Mul by the scale, Add of an additive mask or Where of a boolean
    one, Softmax, MatMul), raised to gated.attention and run as the
    flash-attention kernel. Query [b, 2, t, 4]; `kv` the key/value dims;
    `mask` the mask's dims (float, additive); `gate` the dims of a sigmoid
    output gate (G1) multiplied onto the result."""
    consts = {"scale": np.array(0.5, np.float32)}
    nodes, k, v = [], "k", "v"
    if rep:  # GQA as transformers' repeat_kv exports it: Expand, Reshape
        consts.update({"ax2": np.array([2], np.int64), "i0": np.array([0], np.int64),
                       "i1": np.array([1], np.int64), "i2": np.array([2], np.int64),
                       "i4": np.array([4], np.int64), "rep": np.array([rep], np.int64)})
        for x in ("k", "v"):
            nodes += [N("Unsqueeze", [x, "ax2"], x + "_u"), N("Shape", [x], x + "_sh"),
                      N("Slice", [x + "_sh", "i0", "i2"], x + "_bh"),
                      N("Slice", [x + "_sh", "i2", "i4"], x + "_sd"),
                      N("Concat", [x + "_bh", "rep", x + "_sd"], x + "_es", axis=0),
                      N("Expand", [x + "_u", x + "_es"], x + "_e"),
                      N("Slice", [x + "_sh", "i0", "i1"], x + "_b"),
                      N("Slice", [x + "_sh", "i1", "i2"], x + "_h"),
                      N("Mul", [x + "_h", "rep"], x + "_hr"),
                      N("Concat", [x + "_b", x + "_hr", x + "_sd"], x + "_rs", axis=0),
                      N("Reshape", [x + "_e", x + "_rs"], x + "_r")]
        k, v = "k_r", "v_r"
    nodes += [N("Transpose", [k], "kt", perm=[0, 1, 3, 2]),
              N("MatMul", ["q", "kt"], "s0"), N("Mul", ["s0", "scale"], "s1")]
    ins = [("q", F, list(q)), ("k", F, list(kv)), ("v", F, list(kv))]
    last = "s1"
    if trilu is not None:  # Where(Trilu(ones of `trilu`'s shape), s, -inf)
        consts.update({"tshape": np.array(trilu, np.int64), "ninf": np.array(-np.inf, np.float32)})
        nodes += [N("ConstantOfShape", ["tshape"], "ones",
                    value=oh.make_tensor("one", B, [1], [True])),
                  N("Trilu", ["ones"], "tri", upper=0), N("Where", ["tri", last, "ninf"], "s_t")]
        last = "s_t"
    if mask is not None:
        nodes.append(N("Add", ["s1", "mask"], "s2"))
        ins.append(("mask", F, list(mask)))
        last = "s2"
    nodes += [N("Softmax", [last], "p", axis=-1), N("MatMul", ["p", v], "o" if gate else "y")]
    if gate is not None:
        nodes += [N("Sigmoid", ["g"], "sg"), N("Mul", ["o", "sg"])]
        ins.append(("g", F, list(gate)))
    return model(nodes, ins, ["y"], consts)


CASES.update({
    # transformers' additive mask [batch, 1, seq, seq] exported with a
    # symbolic head dim (the silent wrong answer of the flash kernel)
    "attention_mask_dyn_heads": (
        attention(mask=["b", "mh", "t", "s"]),
        [{"b": 2, "t": 5, "s": 7, "mh": 1}, {"b": 2, "t": 5, "s": 7, "mh": 2},
         {"b": 1, "t": 1, "s": 1, "mh": 1}, {"b": 3, "t": 40, "s": 40, "mh": 1}]),
    # every mask dim symbolic and unrelated to the scores' dims: each one
    # 1 or full at run time (a key-padding mask [b, 1, 1, s], a mask shared
    # over the batch, a full one)
    "attention_mask_dyn_all": (
        attention(mask=["mb", "mh", "mt", "ms"]),
        [{"b": 2, "t": 5, "s": 7, "mb": 2, "mh": 1, "mt": 1, "ms": 7},
         {"b": 2, "t": 5, "s": 7, "mb": 1, "mh": 2, "mt": 5, "ms": 7},
         {"b": 2, "t": 5, "s": 7, "mb": 2, "mh": 2, "mt": 5, "ms": 1},
         {"b": 2, "t": 5, "s": 7, "mb": 1, "mh": 1, "mt": 1, "ms": 1},
         {"b": 3, "t": 33, "s": 70, "mb": 3, "mh": 2, "mt": 33, "ms": 70}]),
    # a rank-2 mask [t, s] with symbolic dims
    "attention_mask_dyn_rank2": (
        attention(mask=["mt", "ms"]),
        [{"b": 2, "t": 5, "s": 7, "mt": 1, "ms": 7},
         {"b": 2, "t": 5, "s": 7, "mt": 5, "ms": 1},
         {"b": 2, "t": 5, "s": 7, "mt": 5, "ms": 7}]),
    # keys/values with their own symbolic batch: 1 (shared over the
    # batch, as MatMul broadcasts it) or the query's
    "attention_kv_dyn_batch": (
        attention(kv=("kb", 2, "s", 4), mask=["b", 1, "t", "s"]),
        [{"b": 3, "kb": 1, "t": 4, "s": 6}, {"b": 3, "kb": 3, "t": 4, "s": 6},
         {"b": 1, "kb": 1, "t": 1, "s": 1}]),
    # keys/values of a static batch of 1 against a symbolic query batch
    "attention_kv_static1_batch": (
        attention(kv=(1, 2, "s", 4)),
        [{"b": 3, "t": 4, "s": 6}, {"b": 1, "t": 2, "s": 3}]),
    # a Trilu mask [1, S] or [T, 1] broadcast over the scores is not the
    # causal mask (it keeps key 0 for every row, or masks nothing); a
    # [T, S] one is (was raised as causal: a silent wrong answer)
    "attention_trilu_1xS": (attention(trilu=[1, 7], kv=("b", 2, 7, 4), q=("b", 2, 5, 4)),
                            [{"b": 2}, {"b": 1}]),
    "attention_trilu_Tx1": (attention(trilu=[5, 1], kv=("b", 2, 7, 4), q=("b", 2, 5, 4)),
                            [{"b": 2}]),
    "attention_trilu_TxS": (attention(trilu=[5, 7], kv=("b", 2, 7, 4), q=("b", 2, 5, 4)),
                            [{"b": 2}]),
    # GQA through repeat_kv (Expand, Reshape with computed shapes, which
    # hide the head_dim from the attention's result type), with a mask
    # whose dims are all symbolic
    "attention_gqa_repeat_kv": (
        attention(q=("b", 4, "t", 4), kv=("b", 2, "s", 4), rep=2, mask=["mb", "mh", "mt", "ms"]),
        [{"b": 2, "t": 5, "s": 7, "mb": 2, "mh": 1, "mt": 5, "ms": 7},
         {"b": 1, "t": 1, "s": 1, "mb": 1, "mh": 1, "mt": 1, "ms": 1},
         {"b": 2, "t": 5, "s": 7, "mb": 1, "mh": 4, "mt": 1, "ms": 7}]),
    # a G1 output gate whose batch and sequence dims are symbolic on
    # their own: 1 or full
    "attention_gate_dyn": (
        attention(mask=["b", 1, "t", "s"], gate=["gb", 2, "gt", 4]),
        [{"b": 2, "t": 5, "s": 7, "gb": 2, "gt": 5}, {"b": 2, "t": 5, "s": 7, "gb": 1, "gt": 5},
         {"b": 2, "t": 5, "s": 7, "gb": 2, "gt": 1}, {"b": 1, "t": 1, "s": 1, "gb": 1, "gt": 1}]),
})


# The other gated ops and fused kernels. Weights are constants (the raising
# passes want them so); every operand dim that may broadcast has its own
# symbolic dim. Full sizes: batch 2, sequence 5 (40 for a long one), model
# width 16; each op is named in a comment as `gatec --report=gates` shows it.
WR = np.random.default_rng(7)
D, FF = 16, 24


def w(*shape, scale=0.25):
    return (WR.standard_normal(shape) * scale).astype(np.float32)


WQ, WK, WV, WO, WG = (w(D, D) for _ in range(5))
W1, W2, W3, WD = w(D, FF), w(D, FF), w(D, 2 * FF), w(FF, D)


def sizes(base, *variants):
    """Run sizes: `base` updated by each variant."""
    return [dict(base, **v) for v in variants]


def act_nodes(act, z, out):
    """act(z) as exporters write it: Sigmoid, NS-sigmoid 0.5 + 0.5·σ, SiLU."""
    if act == "sigmoid":
        return [N("Sigmoid", [z], out)]
    if act == "ns_sigmoid":
        return [N("Sigmoid", [z], out + "_s"), N("Mul", ["half", out + "_s"], out + "_h"),
                N("Add", ["half", out + "_h"], out)]
    return [N("Sigmoid", [z], out + "_s"), N("Mul", [z, out + "_s"], out)]


def glu(act="silu", bias=None, form="two"):
    """GLU feed-forward act(x·W [+ bw]) ⊙ (x·V [+ bv]) · W_down on x [b, t, D].
    form: two projections, or one fused [W|V] projection cut by Split or
    Slice. bias: the dims of the two biases (graph inputs)."""
    nodes, consts = [], {"W": W1, "V": W2, "Wd": WD, "WV": W3, "half": np.array(0.5, np.float32),
                         "one": np.array(1.0, np.float32), "r2": np.array(2 ** -0.5, np.float32)}
    ins = [("x", F, ["b", "t", D])]
    if form == "two":
        nodes += [N("MatMul", ["x", "W"], "a0"), N("MatMul", ["x", "V"], "b0")]
    elif form == "split_bias":
        # nn.Linear(D, 2·FF) with its bias, then chunked (the bias columns
        # are cut at compile time with the weight's).
        nodes += [N("MatMul", ["x", "WV"], "ab0"), N("Add", ["ab0", "bwv"], "ab"),
                  oh.make_node("Split", ["ab", "sp"], ["a0", "b0"], axis=-1)]
        consts["sp"] = np.array([FF, FF], np.int64)
        consts["bwv"] = w(2 * FF)
    elif form == "split":
        nodes += [N("MatMul", ["x", "WV"], "ab"),
                  oh.make_node("Split", ["ab", "sp"], ["a0", "b0"], axis=-1)]
        consts["sp"] = np.array([FF, FF], np.int64)
    else:
        nodes += [N("MatMul", ["x", "WV"], "ab"),
                  N("Slice", ["ab", "s0", "e0", "ax"], "a0"), N("Slice", ["ab", "e0", "e1", "ax"], "b0")]
        consts.update(s0=np.array([0], np.int64), e0=np.array([FF], np.int64),
                      e1=np.array([2 * FF], np.int64), ax=np.array([-1], np.int64))
    a, bb = "a0", "b0"
    if bias:
        nodes += [N("Add", ["a0", "bw"], "a1"), N("Add", ["b0", "bv"], "b1")]
        ins += [("bw", F, bias[0]), ("bv", F, bias[1])]
        a, bb = "a1", "b1"
    if act == "silu":
        nodes += [N("Sigmoid", [a], "sa"), N("Mul", [a, "sa"], "ga")]
    else:  # GELU (erf) decomposed: 0.5·p·(1 + erf(p/√2))
        nodes += [N("Mul", [a, "r2"], "ea"), N("Erf", ["ea"], "eb"), N("Add", ["one", "eb"], "ec"),
                  N("Mul", [a, "half"], "ed"), N("Mul", ["ed", "ec"], "ga")]
    nodes += [N("Mul", ["ga", bb], "h"), N("MatMul", ["h", "Wd"])]
    return model(nodes, ins, ["y"], consts)


def proj_attention(gate_on, act="sigmoid", gate=("gb", "gt", D), mode="multiply"):
    """A self-attention layer on x [b, t, D] with q/k/v/o projections and
    2 heads of 8, and a gate act(xg·W_g) (xg [gate], its own dims) on the
    query (G4), key (G3), value (G2) or output (G5) projection, or on the
    attention's result before the output projection (G1): token-major
    [b, t, 16] (g1) or headwise [b, t, 2, 1] (g1h)."""
    nodes = [N("MatMul", ["x", "Wq"], "q0"), N("MatMul", ["x", "Wk"], "k0"),
             N("MatMul", ["x", "Wv"], "v0"),
             N("MatMul", ["xg", "Wgh" if gate_on == "g1h" else "Wg"], "gl")]
    nodes += act_nodes(act, "gl", "ga")
    names = {"q": "q0", "k": "k0", "v": "v0"}
    if gate_on in names:
        nodes.append(N("Mul" if mode == "multiply" else "Add", [names[gate_on], "ga"], gate_on + "1"))
        names[gate_on] = gate_on + "1"
    for n in "qkv":
        nodes += [N("Reshape", [names[n], "hs"], n + "r"),
                  N("Transpose", [n + "r"], n + "h", perm=[0, 2, 1, 3])]
    nodes += [N("Transpose", ["kh"], "kt", perm=[0, 1, 3, 2]), N("MatMul", ["qh", "kt"], "s0"),
              N("Mul", ["s0", "scale"], "s1"), N("Softmax", ["s1"], "p", axis=-1),
              N("MatMul", ["p", "vh"], "o0"), N("Transpose", ["o0"], "o1", perm=[0, 2, 1, 3])]
    op = "Mul" if mode == "multiply" else "Add"
    if gate_on == "g1h":  # [b, t, 2, 8] ⊙ act(xg·W_g)[gb, gt, 2, 1]
        nodes += [N("Reshape", ["ga", "hw"], "ga4"), N(op, ["o1", "ga4"], "o1g")]
    nodes.append(N("Reshape", ["o1g" if gate_on == "g1h" else "o1", "ms"], "o2"))
    if gate_on == "g1":  # [b, t, 16] ⊙ act(xg·W_g)[gb, gt, 16]
        nodes.append(N(op, ["o2", "ga"], "o2g"))
    nodes.append(N("MatMul", ["o2g" if gate_on == "g1" else "o2", "Wo"], "o3" if gate_on == "o" else "y"))
    if gate_on == "o":
        nodes.append(N(op, ["o3", "ga"]))
    return model(nodes, [("x", F, ["b", "t", D]), ("xg", F, list(gate))], ["y"],
                 {"Wq": WQ, "Wk": WK, "Wv": WV, "Wo": WO, "Wg": WG,
                  "scale": np.array(8 ** -0.5, np.float32), "half": np.array(0.5, np.float32),
                  "hs": np.array([0, 0, 2, 8], np.int64), "ms": np.array([0, 0, D], np.int64),
                  "Wgh": WG[:, :2].copy(), "hw": np.array([0, 0, 2, 1], np.int64)})


def residual(kind, alpha=None):
    """A (gated) residual combine of stream x [xb, xt, D] and branch y
    [yb, yt, D] (for input: u), gate logits g [gb, gt, D] (graph inputs,
    each with its own dims), as GTrXL / Flamingo / ReZero / LayerScale
    write it."""
    X, Y, G = ("x", F, ["xb", "xt", D]), ("y0", F, ["yb", "yt", D]), ("g", F, ["gb", "gt", D])
    consts = {"one": np.array(1.0, np.float32)}
    if kind == "input":  # σ(u·W_g) ⊙ u + y
        nodes = [N("MatMul", ["x", "Wg"], "gl"), N("Sigmoid", ["gl"], "s"),
                 N("Mul", ["s", "x"], "sx"), N("Add", ["sx", "y0"])]
        consts["Wg"] = WG
        return model(nodes, [X, Y], ["y"], consts)
    if kind == "output":  # x + σ(g) ⊙ y
        nodes = [N("Sigmoid", ["g"], "s"), N("Mul", ["s", "y0"], "sy"), N("Add", ["x", "sy"])]
    elif kind == "highway":  # σ(g) ⊙ x + (1 − σ(g)) ⊙ y
        nodes = [N("Sigmoid", ["g"], "s"), N("Mul", ["s", "x"], "sx"), N("Sub", ["one", "s"], "r"),
                 N("Mul", ["r", "y0"], "ry"), N("Add", ["sx", "ry"])]
    elif kind == "sigtanh":  # x + σ(g) ⊙ tanh(y)
        nodes = [N("Sigmoid", ["g"], "s"), N("Tanh", ["y0"], "ty"), N("Mul", ["s", "ty"], "st"),
                 N("Add", ["x", "st"])]
    elif kind == "gru":  # (1 − σ(g)) ⊙ x + σ(g) ⊙ tanh(y)
        nodes = [N("Sigmoid", ["g"], "z"), N("Sub", ["one", "z"], "r"), N("Mul", ["r", "x"], "rx"),
                 N("Tanh", ["y0"], "ty"), N("Mul", ["z", "ty"], "zt"), N("Add", ["rx", "zt"])]
    else:  # x + f(α) ⊙ y, α a constant or a graph input of dims `alpha`
        a = "alpha"
        if isinstance(alpha, np.ndarray):
            consts["alpha"] = alpha
        nodes = [N("Tanh", ["alpha"], "ta")] if kind == "tanh" else []
        nodes += [N("Mul", ["ta" if kind == "tanh" else a, "y0"], "ay"), N("Add", ["x", "ay"])]
        ins = [X, Y] + ([] if isinstance(alpha, np.ndarray) else [("alpha", F, alpha)])
        return model(nodes, ins, ["y"], consts)
    return model(nodes, [X, Y, G], ["y"], consts)


def rms_norm(weight=None, unit_offset=False):
    """x · (1 / sqrt(mean(x²) + eps)) · w (or · (1 + w)) on x [b, t, D];
    w a constant [D], or a graph input of dims `weight`."""
    consts = {"two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32),
              "one": np.array(1.0, np.float32)}
    ins = [("x", F, ["b", "t", D])]
    if weight is None:
        consts["w"] = (1.0 + w(D)).astype(np.float32)
    else:
        ins.append(("w", F, weight))
    nodes = [N("Pow", ["x", "two"], "x2"), N("ReduceMean", ["x2"], "m", axes=[-1], keepdims=1),
             N("Add", ["m", "eps"], "me"), N("Sqrt", ["me"], "r"), N("Div", ["one", "r"], "ir"),
             N("Mul", ["x", "ir"], "n")]
    if unit_offset:
        nodes += [N("Add", ["one", "w"], "w1"), N("Mul", ["n", "w1"])]
    else:
        nodes.append(N("Mul", ["n", "w"]))
    return model(nodes, ins, ["y"], consts)


def gated_rms_norm(first=False):
    """Gated DeltaNet's gated RMSNorm RMSNorm(x)·w ⊙ silu(z), or with
    `first` Mamba2's RMSNorm(x ⊙ silu(z))·w, on x [b, t, D] and z [zb, zt,
    D] of their own symbolic dims (either may broadcast the other)."""
    consts = {"w": (1.0 + w(D)).astype(np.float32)}
    ins = [("x", F, ["b", "t", D]), ("z", F, ["zb", "zt", D])]
    nodes = [N("Sigmoid", ["z"], "zs"), N("Mul", ["z", "zs"], "silu")]
    if first:
        nodes += [N("Mul", ["x", "silu"], "xg"),
                  N("RMSNormalization", ["xg", "w"], "y", axis=-1, epsilon=1e-6)]
    else:
        nodes += [N("RMSNormalization", ["x", "w"], "n", axis=-1, epsilon=1e-6),
                  N("Mul", ["n", "silu"], "y")]
    return model(nodes, ins, ["y"], consts, opset=23)


def short_conv(K=3):
    """LFM2's c ⊙ causal_conv(b ⊙ x) on b [nb, C, tb], x [n, C, t], c [nc,
    C, tc] of their own symbolic dims: not provably one shape, so not
    raised (the onnx ops broadcast)."""
    C = 4
    consts = {"wc": w(C, 1, K, scale=0.5), "z0": np.array([0], np.int64),
              "ax": np.array([2], np.int64)}
    ins = [("bg", F, ["nb", C, "tb"]), ("x", F, ["n", C, "t"]), ("c", F, ["nc", C, "tc"])]
    nodes = [N("Mul", ["bg", "x"], "bx"),
             N("Conv", ["bx", "wc"], "cv", group=C, kernel_shape=[K], pads=[K - 1, K - 1]),
             N("Shape", ["bx"], "tl", start=2, end=3),
             N("Slice", ["cv", "z0", "tl", "ax"], "cs"), N("Mul", ["c", "cs"], "y")]
    return model(nodes, ins, ["y"], consts)


def layer_norm(scale=(D,), bias=(D,)):
    """ONNX LayerNormalization-17 over the last axis of x [b, t, D], scale
    and bias graph inputs of the given dims."""
    return model([N("LayerNormalization", ["x", "sc", "bi"], axis=-1, epsilon=1e-5)],
                 [("x", F, ["b", "t", D]), ("sc", F, list(scale)), ("bi", F, list(bias))], ["y"])


def linear_attention(rule, decay=None, beta=None, state=None):
    """ONNX LinearAttention-27 (packed [b, T, H·D], 2 query and 2 key/value
    heads of 8), the way run_linear_attention.py builds it; outputs y and
    the present state s. decay/beta/state: their dims (None: absent)."""
    names = ["query", "key", "value", "", "", ""]
    ins = [(n, F, ["b", "T", D]) for n in names[:3]]
    for i, (n, dims) in enumerate([("past_state", state), ("decay", decay), ("beta", beta)]):
        if dims is not None:
            ins.append((n, F, list(dims)))
            names[3 + i] = n
    while names[-1] == "":
        names.pop()
    node = oh.make_node("LinearAttention", names, ["y", "s"], q_num_heads=2, kv_num_heads=2,
                        update_rule=rule)
    return model([node], ins, ["y", "s"], opset=27)


def mm_chain(col=("cr", 1), add=("dr", "dn")):
    """A GEMM [m, D]·[D, FF] whose element-wise consumers read a column
    operand c [col] and an addend d [add] (tile-and-fuse's producer)."""
    return model([N("MatMul", ["a", "W"], "p"), N("Mul", ["p", "c"], "pc"),
                  N("Add", ["pc", "d"], "pd"), N("Relu", ["pd"])],
                 [("a", F, ["m", D]), ("c", F, list(col)), ("d", F, list(add))], ["y"], {"W": W1})


BT = {"b": 2, "t": 5}
GLU_RUNS = sizes(BT, {}, {"b": 1}, {"t": 1}, {"b": 1, "t": 1}, {"b": 3, "t": 40})
GATE_RUNS = sizes(dict(BT, gb=2, gt=5), {}, {"gb": 1}, {"gt": 1}, {"gb": 1, "gt": 1},
                  {"b": 1, "t": 1, "gb": 1, "gt": 1}, {"b": 3, "t": 40, "gb": 3, "gt": 1})
RES = dict(xb=2, xt=5, yb=2, yt=5, gb=2, gt=5)
RES_RUNS = sizes(RES, {}, {"yb": 1}, {"yt": 1}, {"gb": 1, "gt": 1}, {"xb": 1, "yb": 1, "gb": 1},
                 {"xt": 1, "yt": 1, "gt": 1}, {k: 1 for k in RES}, {"xt": 40, "yt": 40, "gt": 40})
LA = {"b": 2, "T": 5}
CASES.update({
    # gated.glu silu (SwiGLU, SiLU as p·σ(p)); x's batch and sequence symbolic
    "glu_swiglu_dyn": (glu("silu"), GLU_RUNS),
    # gated.glu gelu (GEGLU, erf decomposed)
    "glu_geglu_dyn": (glu("gelu"), GLU_RUNS),
    # gated.glu silu from one fused [W|V] projection cut by Slice (raised:
    # the weight is sliced at compile time)
    "glu_swiglu_slice": (glu("silu", form="slice"), GLU_RUNS[::2]),
    # not raised (RaiseGlu reads Slice, not Split): MatMul, Split and the
    # element-wise chain, fused
    "glu_swiglu_split": (glu("silu", form="split"), GLU_RUNS[::2]),
    # not raised (biases between the projections and the product): GEMMs
    # whose bias Adds read a [fb] bias (1 or FF at run time) and a [1] one
    "glu_swiglu_bias_dyn": (
        glu("silu", bias=(["fb"], [1])),
        sizes(dict(BT, fb=FF), {}, {"fb": 1}, {"b": 1, "t": 1, "fb": 1}, {"t": 40})),
    # gated.glu silu with both biases: one nn.Linear [W|V] with its bias,
    # cut by Split
    "glu_swiglu_split_bias": (glu("silu", form="split_bias"), GLU_RUNS[::2]),
    # gated.rms_norm with a gate (after the norm, Gated DeltaNet; before
    # it, Mamba2): x and z broadcast either way at run time
    "rms_norm_gated_dyn": (gated_rms_norm(), sizes(
        dict(BT, zb=2, zt=5), {}, {"b": 1}, {"zb": 1}, {"t": 1}, {"zt": 1},
        {"b": 1, "t": 1}, {"zb": 1, "zt": 40, "t": 40})),
    "rms_norm_gate_first_dyn": (gated_rms_norm(first=True), sizes(
        dict(BT, zb=2, zt=5), {}, {"b": 1}, {"zt": 1}, {"zb": 1, "zt": 40, "t": 40})),
    # LFM2's short conv with b, x and c of their own dims (not raised: the
    # three are not provably one shape); broadcast either way
    "short_conv_dyn": (short_conv(), sizes(
        dict(nb=2, n=2, nc=2, tb=5, t=5, tc=5), {}, {"nb": 1}, {"nc": 1},
        {"tc": 1}, {"n": 1, "nc": 1, "nb": 1, "t": 40, "tb": 40, "tc": 40})),
    # gated.gate G2 sigmoid multiply on the value projection; the gate's
    # input xg has its own batch and sequence
    "gate_g2_value_dyn": (proj_attention("v"), GATE_RUNS),
    # gated.gate G3 ns_sigmoid multiply on the key projection
    "gate_g3_key_ns_dyn": (proj_attention("k", "ns_sigmoid"), GATE_RUNS[:4]),
    # gated.gate G4 silu multiply on the query projection
    "gate_g4_query_silu_dyn": (proj_attention("q", "silu"), GATE_RUNS[:4]),
    # gated.gate G5 sigmoid multiply on the output projection; also the
    # gated value of batch 1 against a gate of batch 2 (the result's batch
    # is the gate's)
    "gate_g5_dense_dyn": (
        proj_attention("o"), GATE_RUNS),
    # gated.gate G5 silu add
    "gate_g5_dense_silu_add_dyn": (proj_attention("o", "silu", mode="add"), GATE_RUNS[:4]),
    # gated.attention with a G1 gate (sigmoid, elementwise, multiply) from
    # the token-major [gb, gt, 16] layout; also the attention of batch 1
    # against a gate of batch 2
    "attention_g1_token_major_dyn": (
        proj_attention("g1"), GATE_RUNS + sizes(dict(BT, gb=2, gt=5), {"b": 1})),
    # gated.attention with a G1 gate (ns_sigmoid, headwise, multiply) of
    # [gb, gt, 2, 1]
    "attention_g1_headwise_ns_dyn": (proj_attention("g1h", "ns_sigmoid"), GATE_RUNS),
    # gated.attention with a G1 gate (silu, elementwise, add)
    "attention_g1_silu_add_dyn": (proj_attention("g1", "silu", mode="add"), GATE_RUNS[:4]),
    # GTrXL residuals, x, y and g graph inputs each with their own batch
    # and sequence. highway and gru (two gated terms) raise to
    # gated.residual; the one-term kinds (input, output, sigtanh and below
    # tanh_scalar, rezero, layerscale) do not here, as their branch is not
    # computed from the stream it is added to (a residual gate needs that:
    # Gemma's embedding·√d added to its first layer is no ReZero gate), and
    # run as plain ops, broadcasting as ONNX does.
    "residual_input_dyn": (residual("input"), [r for r in RES_RUNS if r["gb"] == 2]),
    "residual_output_dyn": (residual("output"), RES_RUNS + sizes(RES, {"xb": 1, "gt": 1})),
    "residual_highway_dyn": (residual("highway"), RES_RUNS),
    "residual_sigtanh_dyn": (residual("sigtanh"), RES_RUNS),
    "residual_gru_dyn": (residual("gru"), RES_RUNS),
    # Flamingo x + tanh(α)·y, α a constant [1]
    "residual_flamingo_dyn": (residual("tanh", np.array([0.3], np.float32)), RES_RUNS[:3] + RES_RUNS[4:7]),
    # not raised (α a graph input [a]: 1 or D at run time): Tanh, Mul, Add
    "residual_flamingo_alpha_dyn": (
        residual("tanh", ["a"]), sizes(dict(RES, a=1), {}, {"a": D}, {"a": D, "yb": 1}, {"xb": 1})),
    # ReZero x + α·y, α a constant scalar
    "residual_rezero_dyn": (residual("rezero", np.array(0.25, np.float32)), RES_RUNS[:3] + RES_RUNS[4:7]),
    # LayerScale x + γ⊙y, γ a constant [D]
    "residual_layerscale_dyn": (residual("scale", w(D)),
                                RES_RUNS[:3] + RES_RUNS[4:7] + sizes(RES, {"xb": 1})),
    # not raised (γ a graph input [gd]: 1 or D): Mul, Add
    "residual_layerscale_vec_dyn": (
        residual("scale", ["gd"]), sizes(dict(RES, gd=D), {}, {"gd": 1}, {"gd": 1, "xb": 1}, {"yt": 1})),
    # gated.rms_norm (x·(1/sqrt(mean(x²)+eps))·w, w constant [D]) on x of
    # symbolic batch and sequence
    "rms_norm_dyn": (rms_norm(), GLU_RUNS),
    # gated.rms_norm of the (1 + w) form
    "rms_norm_unit_offset_dyn": (rms_norm(unit_offset=True), GLU_RUNS[::2]),
    # not raised (w a graph input [wd]: 1 or D): the decomposed chain
    "rms_norm_weight_dyn": (rms_norm(weight=["wd"]), sizes(dict(BT, wd=D), {}, {"wd": 1}, {"b": 1, "t": 1, "wd": 1})),
    # gated.layer_norm (LayerNormalization, scale and bias inputs [D])
    "layer_norm_dyn": (layer_norm(), GLU_RUNS),
    # LayerNormalization whose scale and bias are [sd] / [bd] (1 or D)
    "layer_norm_weight_dyn": (
        layer_norm(["sd"], ["bd"]), sizes(dict(BT, sd=D, bd=D), {}, {"sd": 1}, {"bd": 1}, {"sd": 1, "bd": 1})),
    # gated.linear_attention gated_delta: decay [db, dt, 2], beta
    # [bb, bt, 1], past state [sb, 2, 8, 8] with their own dims, run at the
    # query's sizes (onnxruntime rejects a decay, beta or state that is 1
    # where the query's is not)
    "linear_attention_gated_delta_dyn": (
        linear_attention("gated_delta", decay=["db", "dt", 2], beta=["bb", "bt", 1],
                         state=["sb", 2, 8, 8]),
        [dict(b=b, T=t, db=b, dt=t, bb=b, bt=t, sb=b) for b, t in [(2, 5), (1, 1), (2, 37)]]),
    # tile-and-fuse: a GEMM whose bias Add reads a [n] bias (1 or FF)
    "matmul_bias_dyn": (
        model([N("MatMul", ["a", "W"], "p"), N("Add", ["p", "bias"])],
              [("a", F, ["b", "t", D]), ("bias", F, ["n"])], ["y"], {"W": W1}),
        sizes(dict(BT, n=FF), {}, {"n": 1}, {"b": 1, "t": 1, "n": 1}, {"t": 40, "n": 1})),
    # tile-and-fuse: GEMM, then Mul by a column [cr, 1], Add of [dr, dn], Relu
    "matmul_chain_col_dyn": (
        mm_chain(), sizes(dict(m=6, cr=6, dr=6, dn=FF), {}, {"cr": 1}, {"dr": 1}, {"dn": 1},
                          {"cr": 1, "dr": 1, "dn": 1}, {"m": 1, "cr": 1, "dr": 1, "dn": 1},
                          {"m": 70, "cr": 70, "dr": 1})),
})
# The cases the GPU script (test/gpu/prepare.py) runs on the device: the
# element-wise branches and the flash-attention kernel's operands (the
# artifacts must stay small enough to carry to the GPU machine).
GPU_SCRIPT_CASES = ("add_dynamic_vs_static", "mul_dynamic_vs_dynamic", "sub_rank_differs",
                    "where_three_way", "chain_max_div", "matmul_batch", "expand_dynamic",
                    "gate_dynamic_last", "attention_mask_dyn_heads", "attention_mask_dyn_all",
                    "attention_mask_dyn_rank2", "attention_kv_dyn_batch",
                    "attention_kv_static1_batch", "attention_gate_dyn")
# Valid ONNX that gatec does not support: a LinearAttention whose beta or
# decay has a symbolic last dim (1 or kv_num_heads; per head or per key
# channel) decides its update rule's shape at compile time. The compile must
# fail cleanly: exit 1 and a message naming the node, no crash.
UNSUPPORTED = {
    # gated.linear_attention delta: beta [b, T, bh], heads 1 (shared) or
    # 2 at run time (both valid ONNX), the sequence 1 or long
    "linear_attention_delta_beta_dyn": (
        linear_attention("delta", beta=["b", "T", "bh"]),
        sizes(dict(LA, bh=2), {}, {"bh": 1}, {"T": 1, "bh": 1}, {"T": 37}, {"b": 1, "T": 1})),
    # gated.linear_attention gated: the decay's last dim symbolic, per head
    # (2) or per key channel (16) at run time, both valid ONNX
    "linear_attention_gated_decay_last_dyn": (
        linear_attention("gated", decay=["b", "T", "dh"]),
        sizes(dict(LA, dh=2), {}, {"dh": D}, {"T": 1}, {"T": 37, "dh": D})),
}
UNSUPPORTED_MESSAGE = r"node 'LinearAttention#0' \(LinearAttention, opset 27\): error: LinearAttention: (beta|decay) must be"
# Sizes that do not broadcast: the run must fail with gatec's message.
BAD = [("mul_dynamic_vs_dynamic", {"n": 3, "p": 3, "q": 5}),
       ("add_dynamic_vs_static", {"p": 3}),
       ("attention_mask_dyn_heads", {"b": 2, "t": 5, "s": 7, "mh": 3}),
       ("attention_mask_dyn_all", {"b": 2, "t": 5, "s": 7, "mb": 2, "mh": 1, "mt": 3, "ms": 7}),
       ("gate_g2_value_dyn", {"b": 2, "t": 5, "gb": 3, "gt": 5}),
       ("residual_output_dyn", dict(RES, yt=3)),
       ("residual_layerscale_vec_dyn", dict(RES, gd=3)),
       ("glu_swiglu_bias_dyn", dict(BT, fb=3)),
       ("matmul_chain_col_dyn", {"m": 6, "cr": 4, "dr": 6, "dn": FF}),
       # Valid ONNX, unsupported: the gated value or residual stream x is
       # the operand that is 1 where the others are not (gated.gate and
       # gated.residual keep x's shape): a clean run-time error.
       ("residual_gru_dyn", dict(RES, xt=1, yb=1)),
       ("gate_g5_dense_dyn", dict(BT, gb=2, gt=5, b=1)),
       ("gate_g5_dense_dyn", dict(BT, gb=2, gt=5, t=1))]


ZERO_MEAN = ("q", "k", "v", "mask", "g", "xg", "y0", "query", "key", "value", "past_state")


def feeds_for(m, sizes, rng):
    feeds = {}
    for vi in m.graph.input:
        tt = vi.type.tensor_type
        shape = [sizes[d.dim_param] if d.dim_param else d.dim_value for d in tt.shape.dim]
        if tt.elem_type == B:
            feeds[vi.name] = rng.random(shape) > 0.5
        elif vi.name == "decay":  # log-decays in (-1, 0)
            feeds[vi.name] = -rng.uniform(0.01, 1.0, shape).astype(np.float32)
        elif vi.name == "beta":  # update rates in (0, 1)
            feeds[vi.name] = rng.uniform(0.05, 1.0, shape).astype(np.float32)
        else:
            off = 0.0 if vi.name in ZERO_MEAN else 3.0
            scale = 0.25 if vi.name == "key" else 1.0  # |k| about 1: the delta rule stays stable
            feeds[vi.name] = ((rng.standard_normal(shape) + off) * scale).astype(np.float32)
    return feeds


OUTPUTS = ("y", "s")  # the models' outputs, in order


def run(args, lib, work, tag, feeds, refs=None):
    cmd = [args.gatec_run, lib, "--atol=1e-5", "--rtol=1e-5"]
    for k, v in feeds.items():
        p = os.path.join(work, "%s_%s.npy" % (tag, k))
        np.save(p, v)
        cmd.append("--input=%s=@%s" % (k, p))
    for i, (out, r) in enumerate(zip(OUTPUTS, refs or [])):
        p = os.path.join(work, "%s_ref%d.npy" % (tag, i))
        np.save(p, r)
        cmd.append("--expected-output=%s=@%s" % (out, p))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--keep")
    ap.add_argument("--gatec-flag", action="append", default=[],
                    help="an extra gatec flag, e.g. --cpu-thread-mapping")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="gatec-bcast-")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261130)
    failures = runs = 0
    libs = {}
    for name, (m, shapes) in CASES.items():
        path, lib = os.path.join(work, name + ".onnx"), os.path.join(work, name + ".so")
        onnx.save(m, path)
        c = subprocess.run([args.gatec, path, "-o", lib] + args.gatec_flag, capture_output=True, text=True)
        if c.returncode != 0:
            print("FAIL %-24s compile: %s" % (name, c.stderr.strip()[-300:]))
            failures += 1
            continue
        libs[name] = lib
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        for k, sizes in enumerate(shapes):
            feeds = feeds_for(m, sizes, rng)
            refs = sess.run(None, feeds)
            r = run(args, lib, work, "%s_%d" % (name, k), feeds, refs)
            runs += 1
            errs = re.findall(r"max \|error\| ([0-9.eE+-]+)", r.stdout + r.stderr)
            ok = r.returncode == 0 and errs
            failures += not ok
            print("%s %-24s %-28s out %-12s max |error| %s" % (
                "ok  " if ok else "FAIL", name, sizes, list(refs[0].shape),
                max(errs) if errs else (r.stdout + r.stderr).strip()[-200:]))
    for name, (m, _) in UNSUPPORTED.items():
        path = os.path.join(work, name + ".onnx")
        onnx.save(m, path)
        c = subprocess.run([args.gatec, path, "-o", os.path.join(work, name + ".so")]
                           + args.gatec_flag, capture_output=True, text=True)
        runs += 1
        ok = c.returncode == 1 and re.search(UNSUPPORTED_MESSAGE, c.stderr)
        failures += not ok
        print("%s %-24s unsupported, rejected: %s" % (
            "ok  " if ok else "FAIL", name,
            "yes" if ok else "no (rc %d) %s" % (c.returncode, c.stderr[-200:])))
    for name, sizes in BAD:
        if name not in libs:
            continue
        r = run(args, libs[name], work, name + "_bad", feeds_for(CASES[name][0], sizes, rng))
        runs += 1
        ok = r.returncode > 0 and "do not broadcast" in r.stdout + r.stderr
        failures += not ok
        print("%s %-24s %-28s rejected: %s" % (
            "ok  " if ok else "FAIL", name, sizes,
            "yes" if ok else "no (rc %d) %s" % (r.returncode, (r.stdout + r.stderr)[-200:])))
    print("dynamic broadcast vs onnxruntime: %d models, %d runs, %d failures"
          % (len(CASES), runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
