#!/usr/bin/env python3
"""Writes hybrid_qwen3next.onnx: a tiny hybrid stack in the Qwen3-Next layout,
built with onnx.helper (opset 27): three Gated DeltaNet layers, then one
softmax attention layer with a G1 output gate. No MoE/MLP blocks.

Gated DeltaNet layer (pre-norm, residual), per Qwen3-Next:
  x = RMSNorm(h)
  q, k, v = x·Wq, x·Wk, x·Wv; depthwise causal conv1d (kernel 4) + SiLU over
            [q|k|v] (written as zero padding, shifted Slices and Muls)
  q, k L2-normalised per head; β = sigmoid(x·Wb); g = −exp(A_log)·softplus(x·Wa + dt_bias)
  o = LinearAttention-27(q, k, v, decay=g [per head], beta=β, gated_delta)
  y = RMSNorm_head(o) ⊙ silu(x·Wz)        (gated RMSNorm)
  h = h + y·Wo
Attention layer: x = RMSNorm(h); Attention-23 (GQA 4/2 heads, causal) on
x·Wq, x·Wk, x·Wv; y ⊙ sigmoid(x·Wg) (G1, elementwise); h = h + y·Wo.

Input x [1, seq, 32] (seq symbolic); outputs y [1, seq, 32] and the first
layer's present_state [1, 2, 8, 8]. Weights random (seed 6).

usage: gen_hybrid_qwen3next.py [OUT.onnx]   (default: next to this script)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, H, DK, DV, KC = 32, 2, 8, 8, 4          # Gated DeltaNet: heads, head dims, conv kernel
AH, AKV, AD = 4, 2, 8                      # attention: query heads, KV heads, head dim
rng = np.random.default_rng(6)
nodes, inits = [], []
counter = [0]


def name(prefix):
    counter[0] += 1
    return "%s_%d" % (prefix, counter[0])


def init(prefix, a, dtype=np.float32):
    n = name(prefix)
    inits.append(numpy_helper.from_array(np.asarray(a, dtype), n))
    return n


def node(op, ins, n_out=1, prefix=None, **attrs):
    outs = [name(prefix or op.lower()) for _ in range(n_out)]
    nodes.append(helper.make_node(op, ins, outs, name=name(op), **attrs))
    return outs[0] if n_out == 1 else outs


def weight(i, o, scale=None):
    return init("W", rng.standard_normal((i, o)) * (scale or 1.0 / np.sqrt(i)))


def rms_norm(x, width, eps=1e-6):
    w = init("norm_w", 1.0 + 0.1 * rng.standard_normal(width))
    return node("RMSNormalization", [x, w], axis=-1, epsilon=eps)


def silu(x):
    return node("Mul", [x, node("Sigmoid", [x])])


def heads(x, h, d):
    return node("Reshape", [x, init("shape", [0, 0, h, d], np.int64)])


def flat(x, width):
    return node("Reshape", [x, init("shape", [0, 0, width], np.int64)])


def causal_conv_silu(x, c):
    """Depthwise causal conv1d over the sequence axis of x [1, T, c]."""
    zeros = init("conv_pad", np.zeros((1, KC - 1, c)))
    xp = node("Concat", [zeros, x], axis=1)           # [1, T+KC-1, c]
    w = rng.standard_normal((KC, c)) / np.sqrt(KC)
    acc = None
    for i in range(KC):
        end = i - (KC - 1) if i < KC - 1 else np.iinfo(np.int64).max
        s = node("Slice", [xp, init("starts", [i], np.int64), init("ends", [end], np.int64),
                           init("axes", [1], np.int64)])
        term = node("Mul", [s, init("conv_w", w[i])])
        acc = term if acc is None else node("Add", [acc, term])
    return silu(acc)


def l2norm(x, h, d):
    x4 = heads(x, h, d)
    ss = node("ReduceSum", [node("Mul", [x4, x4]), init("axes", [-1], np.int64)], keepdims=1)
    n = node("Sqrt", [node("Add", [ss, init("eps", 1e-6)])])
    return flat(node("Div", [x4, n]), h * d)


def gated_deltanet(h, first):
    x = rms_norm(h, D)
    q, k, v = (node("MatMul", [x, weight(D, H * d)]) for d in (DK, DK, DV))
    qkv = causal_conv_silu(node("Concat", [q, k, v], axis=-1), H * (2 * DK + DV))
    q, k, v = node("Split", [qkv, init("split", [H * DK, H * DK, H * DV], np.int64)],
                   n_out=3, axis=-1)
    q, k = l2norm(q, H, DK), l2norm(k, H, DK)
    beta = node("Sigmoid", [node("MatMul", [x, weight(D, H)])])
    a = node("Add", [node("MatMul", [x, weight(D, H)]), init("dt_bias", rng.uniform(-1, 1, H))])
    a_log = init("A_log", np.log(rng.uniform(1, 16, H)))
    g = node("Mul", [node("Neg", [node("Exp", [a_log])]), node("Softplus", [a])])
    o, state = node("LinearAttention", [q, k, v, "", g, beta], n_out=2,
                    q_num_heads=H, kv_num_heads=H, update_rule="gated_delta")
    z = node("MatMul", [x, weight(D, H * DV)])
    y = node("Mul", [rms_norm(heads(o, H, DV), DV), silu(heads(z, H, DV))])
    out = node("MatMul", [flat(y, H * DV), weight(H * DV, D)])
    return node("Add", [h, out]), state


def gated_attention(h):
    x = rms_norm(h, D)
    q = node("MatMul", [x, weight(D, AH * AD)])
    k = node("MatMul", [x, weight(D, AKV * AD)])
    v = node("MatMul", [x, weight(D, AKV * AD)])
    y = node("Attention", [q, k, v], n_out=1, q_num_heads=AH, kv_num_heads=AKV, is_causal=1)
    gate = node("Sigmoid", [node("MatMul", [x, weight(D, AH * AD)])])
    out = node("MatMul", [node("Mul", [y, gate]), weight(AH * AD, D)])
    return node("Add", [h, out])


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "hybrid_qwen3next.onnx")
    h = "x"
    states = []
    for layer in range(3):
        h, s = gated_deltanet(h, layer == 0)
        states.append(s)
    h = gated_attention(h)
    nodes.append(helper.make_node("Identity", [h], ["y"], name="out_y"))
    nodes.append(helper.make_node("Identity", [states[0]], ["state0"], name="out_state0"))
    graph = helper.make_graph(
        nodes, "hybrid_qwen3next",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", D]),
         helper.make_tensor_value_info("state0", TensorProto.FLOAT, [1, H, DK, DV])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 27)],
                              producer_name="gen_hybrid_qwen3next.py")
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, out_path)
    print("wrote", out_path)


if __name__ == "__main__":
    main()
