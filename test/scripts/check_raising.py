#!/usr/bin/env python3
"""Every committed model raises to exactly the expected gated ops.

For each model in test/models, runs `gatec MODEL --compile-to=gated` and
compares the multiset of gated ops (with their kind: activation, placement,
granularity, mode) with the table below, written from how each model was
built (test/models/export_models.py, export_gate_models.py). Also checks
that no gate arithmetic is left over as onnx ops (Sigmoid, Tanh, Softmax,
Erf), except where a construct keeps part of its maths outside the gated op
(listed in LEFTOVER with the reason).

usage: check_raising.py [--gatec PATH]
"""
import argparse
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "test", "models")

ATT = "attention"
G1 = lambda act, gran, mode="multiply": "attention+G1(%s, %s, %s)" % (act, gran, mode)
EXPECTED = {
    "gated_attn_elementwise": [G1("sigmoid", "elementwise")],
    "gated_attn_elementwise_dyn": [G1("sigmoid", "elementwise")],
    "gated_attn_elementwise_dynamo": [G1("sigmoid", "elementwise")],
    "gated_attn_headwise": [G1("sigmoid", "headwise")],
    "gated_attn_headwise_dyn": [G1("sigmoid", "headwise")],
    "sdpa_attn": [G1("sigmoid", "elementwise")],
    "gated_attn_head_major": [G1("sigmoid", "elementwise")],
    "gated_attn_head_major_dyn": [G1("sigmoid", "elementwise")],
    "gated_attn_headwise_head_major": [G1("sigmoid", "headwise")],
    "qwen3next_gated_attn": [G1("sigmoid", "elementwise"), "rms_norm", "rms_norm"],
    "qwen3next_gated_attn_dyn": [G1("sigmoid", "elementwise"), "rms_norm", "rms_norm"],
    "llama_block": [ATT, "glu silu", "rms_norm", "rms_norm"],
    "llama_block_dyn": [ATT, "glu silu", "rms_norm", "rms_norm"],
    "llama_block_dynamo": [ATT, "glu silu", "rms_norm", "rms_norm"],
    "llama_block_fn": [ATT, "glu silu", "rms_norm", "rms_norm"],
    "g1_ns_sigmoid": [G1("ns_sigmoid", "elementwise")],
    "g1_silu": [G1("silu", "elementwise")],
    "g1_additive_silu": [G1("silu", "elementwise", "add")],
    "g1_headwise_nobias": [G1("sigmoid", "headwise")],
    "gqa_repeat_interleave": [G1("sigmoid", "elementwise")],
    "onnx_attention23": [G1("sigmoid", "elementwise")],
    "gate_g2_value": [ATT, "gate G2 sigmoid multiply"],
    "gate_g2_value_dyn": [ATT, "gate G2 sigmoid multiply"],
    "gate_g3_key": [ATT, "gate G3 sigmoid multiply"],
    "gate_g4_query": [ATT, "gate G4 sigmoid multiply"],
    "gate_g5_dense": [ATT, "gate G5 sigmoid multiply"],
    "glu_sigmoid": ["glu sigmoid"],
    "glu_bilinear": ["glu identity"],
    "glu_reglu": ["glu relu"],
    "glu_geglu_erf": ["glu gelu"],
    "glu_geglu_tanh": ["glu gelu_tanh"],
    "glu_swiglu": ["glu silu"],
    "glu_swiglu_dyn": ["glu silu"],
    "glu_swiglu_fused_proj": ["glu silu"],
    "gtrxl_input": ["residual input"],
    "gtrxl_output": ["residual output"],
    "gtrxl_output_dyn": ["residual output"],
    "gtrxl_highway": ["residual highway"],
    "gtrxl_sigtanh": ["residual sigtanh"],
    "gtrxl_gru": ["residual gru"],
    "flamingo_xattn": [ATT, "layer_norm", "layer_norm", "residual tanh_scalar", "residual tanh_scalar"],
    "flamingo_xattn_dyn": [ATT, "layer_norm", "layer_norm", "residual tanh_scalar", "residual tanh_scalar"],
    "rezero_block": ["residual rezero"],
    "layerscale_block": ["residual layerscale"],
    "onnx_rmsnorm23": ["rms_norm"],
    # Three Gated DeltaNet layers (LinearAttention-27) and a G1-gated
    # attention layer; 7 RMSNorms (4 pre-norms, and 3 gated RMSNorms per
    # head: RMSNorm(o) ⊙ silu(z), one gated.rms_norm with its gate).
    # Each causal-conv tap added as acc + w_i ⊙ x_shifted has the LayerScale
    # form x + γ⊙y and is raised as such (3 taps in each of 3 layers; the
    # same maths).
    # (Its depthwise causal conv, unrolled as Σ_k w_k ⊙ x[t-k], is no
# LayerScale residual: no tap is computed from the sum it is added to.)
"hybrid_qwen3next": ["linear_attention"] * 3 + [G1("sigmoid", "elementwise")]
                        + ["rms_norm"] * 4 + ["rms_norm gate(silu)"] * 3,
}
# Gate arithmetic that stays as onnx ops, and why.
LEFTOVER = {
    # The GRU-type gate's reset gate r = σ(W_r y + U_r x) feeds the
    # candidate tanh(W_g y + U_g (r ⊙ x)), which gated.residual gru takes
    # as its (pre-tanh) input.
    "gtrxl_gru": {"Sigmoid": 1},
    # Flamingo's feed-forward uses an erf GELU without a gate.
    "flamingo_xattn": {"Erf": 1},
    "flamingo_xattn_dyn": {"Erf": 1},
    # Per Gated DeltaNet layer: SiLU after the conv and β = sigmoid(b),
    # outside gated.linear_attention (the output gate's SiLU is the gated
    # RMSNorm's).
    "hybrid_qwen3next": {"Sigmoid": 6},
}


def gated_ops(ir):
    ops = collections.Counter()
    for line in ir.splitlines():
        m = re.search(r"= gated\.(\w+)(.*)", line)
        if not m:
            continue
        op, rest = m.groups()
        if op == "attention":
            g = re.search(r"gate\(%\w+ : [^,]+, (\w+), (\w+), (\w+)\)", rest)
            ops[G1(*g.groups()) if g else ATT] += 1
        elif op in ("glu", "residual"):
            ops["%s %s" % (op, rest.split()[0])] += 1
        elif op == "gate":
            ops["gate " + " ".join(rest.split()[:3])] += 1
        elif op == "rms_norm" and " gate(" in rest:
            g = re.search(r"gate\(%\w+ : [^,]+, (\w+)\)", rest)
            ops["rms_norm gate(%s)" % g.group(1)] += 1
        else:
            ops[op] += 1
    return ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    args = ap.parse_args()
    files = sorted(f[:-5] for f in os.listdir(MODELS) if f.endswith(".onnx"))
    failures = 0
    for name in files:
        if name not in EXPECTED:
            print("FAIL %s: no expectation (add it to EXPECTED)" % name)
            failures += 1
            continue
        r = subprocess.run([args.gatec, os.path.join(MODELS, name + ".onnx"),
                            "--compile-to=gated"], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: gatec exit %d: %s" % (name, r.returncode, r.stderr.strip()[:300]))
            failures += 1
            continue
        got = gated_ops(r.stdout)
        want = collections.Counter(EXPECTED[name])
        left = collections.Counter(re.findall(r'"onnx\.(Sigmoid|Tanh|Softmax|Erf)"', r.stdout))
        allowed = collections.Counter(LEFTOVER.get(name, {}))
        if got != want or left != allowed:
            print("FAIL %s:\n  want %s\n  got  %s\n  leftover %s (allowed %s)"
                  % (name, dict(want), dict(got), dict(left), dict(allowed)))
            failures += 1
        else:
            print("ok   %s: %s" % (name, ", ".join(sorted(got.elements()))))
    print("raising: %d models, %d as expected, %d failures"
          % (len(files), len(files) - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
