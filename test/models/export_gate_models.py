#!/usr/bin/env python3
"""Export one small ONNX model per gate construct of the seed documents, and
write/verify the seeds' worked numeric examples (seed_examples.json).

Constructs (written from shared/seeds/002_*, 004_*, 000_*):
  gtrxl_*        GTrXL residual gates around a sublayer y = ReLU(Linear(x)):
                 input, output, highway, sigtanh, gru           (seed 002 §3)
  glu_*          GLU-family FFNs (act(xW) * xV) W2, bias-free  (seed 002 §7-8)
  flamingo_xattn Flamingo gated cross-attention + gated FFN     (seed 004)
  rezero_block, layerscale_block  the seed's GatedBranch       (seed 004)
  gate_g2..g5    gate placements G2 value / G3 key / G4 query / G5 dense
  g1_*           G1 variants: NS-sigmoid, SiLU, additive SiLU, headwise
                 without bias                                   (seed 000)
  gqa_repeat_interleave  GQA with torch.repeat_interleave + G1 gate
  onnx_attention23, onnx_rmsnorm23  onnx.helper graphs at opset 23
                 (ONNX Attention-23 with GQA + G1 gate; RMSNormalization-23)

Files are written next to this script, whatever the current directory:
  <name>.onnx      TorchScript exporter (dynamo=False), opset 17, static shapes
                   x [2, 8, d] (flamingo also media [2, 5, d]); the two onnx_*23
                   models are built with onnx.helper (opset 23, IR 11)
  <name>_dyn.onnx  TorchScript exporter, opset 17, dims 0/1 of every input and
                   output dynamic ("batch", "seq"; flamingo's media: "batch",
                   "media_seq")
  seed_examples.json  the seeds' worked numbers (printed values with their
                   number of decimals, plus the exact float64 recomputation)

With --check (the default) every file is checked with onnx.checker
(full_check) and run with onnxruntime (CPU) against the PyTorch module (or a
numpy reference for the onnx_* graphs); max abs error must be < 1e-4. The
_dyn files are run at batch 1/2/3 x seq 3/8/17. The seed examples are
recomputed with numpy and every printed value must equal the exact value
rounded to the printed number of decimals, except the known seed slips listed
in KNOWN_SEED_MISMATCHES (the check fails if that list is wrong either way).

Regenerate:  /tmp/torchenv/bin/python test/models/export_gate_models.py
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET_TS = 17       # TorchScript exporter; ONNX C++ 1.12 (Debian) knows opset <= 17
OPSET_HELPER = 23   # Attention-23, RMSNormalization-23
IR_HELPER = 11      # IR version of opset 23 (onnx 1.18)
STATIC_B, STATIC_T = 2, 8
MEDIA_T = 5         # flamingo media tokens (static)
TOL = 1e-4


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def init_normal_(lin: nn.Linear, w_std: float, b_std: float | None = None) -> None:
    """Non-trivial random weights: N(0, w_std^2), bias N(0, b_std^2)."""
    with torch.no_grad():
        lin.weight.normal_(0.0, w_std)
        if lin.bias is not None and b_std is not None:
            lin.bias.normal_(0.0, b_std)


def causal_attention(q, k, v, dh: int):
    """Explicit causal softmax attention on [B, H, T, dh] (as export_models.py
    writes it: matmul, / sqrt(dh), masked_fill(~tril), softmax, matmul)."""
    T = q.shape[-2]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(dh)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=q.device))
    scores = scores.masked_fill(~causal, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v)


class ReluSublayer(nn.Module):
    """The sublayer whose output the GTrXL gates combine with x:
    y = ReLU(Linear(x)) (GTrXL applies a ReLU to the submodule output)."""

    def __init__(self, d: int):
        super().__init__()
        self.lin = nn.Linear(d, d, bias=True)
        init_normal_(self.lin, 1.0 / math.sqrt(d), 0.3)

    def forward(self, x):
        return F.relu(self.lin(x))


# ---------------------------------------------------------------------------
# GTrXL residual gates (seed 002 §3.4-3.8); W_g etc. act on column vectors,
# i.e. nn.Linear(d, d).weight is W_g.
# ---------------------------------------------------------------------------

class GTrXLInput(nn.Module):
    """g(x, y) = sigmoid(W_g x) * x + y   (no bias, as in the paper)."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.f = ReluSublayer(d)
        self.Wg = nn.Linear(d, d, bias=False)
        init_normal_(self.Wg, 1.0 / math.sqrt(d))

    def gate_values(self, x):
        return torch.sigmoid(self.Wg(x))

    def forward(self, x):
        y = self.f(x)
        return torch.sigmoid(self.Wg(x)) * x + y


class GTrXLOutput(nn.Module):
    """g(x, y) = x + sigmoid(W_g x - b_g) * y   (bias subtracted literally)."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.f = ReluSublayer(d)
        self.Wg = nn.Linear(d, d, bias=False)
        self.bg = nn.Parameter(torch.ones(d))   # gated identity init: b_g > 0
        init_normal_(self.Wg, 1.0 / math.sqrt(d))
        with torch.no_grad():
            self.bg.copy_(0.5 + 0.5 * torch.randn(d))

    def gate_values(self, x):
        return torch.sigmoid(self.Wg(x) - self.bg)

    def forward(self, x):
        y = self.f(x)
        return x + torch.sigmoid(self.Wg(x) - self.bg) * y


class GTrXLHighway(nn.Module):
    """s = sigmoid(W_g x + b_g);  g(x, y) = s * x + (1 - s) * y."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.f = ReluSublayer(d)
        self.Wg = nn.Linear(d, d, bias=True)
        init_normal_(self.Wg, 1.0 / math.sqrt(d), 0.5)

    def gate_values(self, x):
        return torch.sigmoid(self.Wg(x))

    def forward(self, x):
        y = self.f(x)
        s = torch.sigmoid(self.Wg(x))
        return s * x + (1 - s) * y


class GTrXLSigTanh(nn.Module):
    """g(x, y) = x + sigmoid(W_g y - b) * tanh(U_g y)."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.f = ReluSublayer(d)
        self.Wg = nn.Linear(d, d, bias=False)
        self.Ug = nn.Linear(d, d, bias=False)
        self.b = nn.Parameter(torch.ones(d))
        init_normal_(self.Wg, 1.5 / math.sqrt(d))
        init_normal_(self.Ug, 1.5 / math.sqrt(d))
        with torch.no_grad():
            self.b.copy_(0.5 + 0.5 * torch.randn(d))

    def gate_values(self, x):
        return torch.sigmoid(self.Wg(self.f(x)) - self.b)

    def forward(self, x):
        y = self.f(x)
        return x + torch.sigmoid(self.Wg(y) - self.b) * torch.tanh(self.Ug(y))


class GTrXLGRU(nn.Module):
    """GRU-type gate:
        r = sigmoid(W_r y + U_r x)
        z = sigmoid(W_z y + U_z x - b_g)
        h = tanh(W_g y + U_g (r * x))
        g(x, y) = (1 - z) * x + z * h"""

    def __init__(self, d: int = 16):
        super().__init__()
        self.f = ReluSublayer(d)
        for n in ("Wr", "Ur", "Wz", "Uz", "Wg", "Ug"):
            lin = nn.Linear(d, d, bias=False)
            init_normal_(lin, 1.0 / math.sqrt(d))
            setattr(self, n, lin)
        self.bg = nn.Parameter(torch.ones(d))
        with torch.no_grad():
            self.bg.copy_(1.0 + 0.5 * torch.randn(d))   # paper: b_g = 2; smaller here

    def gate_values(self, x):
        y = self.f(x)
        return torch.sigmoid(self.Wz(y) + self.Uz(x) - self.bg)

    def forward(self, x):
        y = self.f(x)
        r = torch.sigmoid(self.Wr(y) + self.Ur(x))
        z = torch.sigmoid(self.Wz(y) + self.Uz(x) - self.bg)
        h = torch.tanh(self.Wg(y) + self.Ug(r * x))
        return (1 - z) * x + z * h


# ---------------------------------------------------------------------------
# GLU family FFNs (seed 002 §7-8): (act(xW) * xV) W2, Linear without bias
# ---------------------------------------------------------------------------

GLU_ACTS = {
    "sigmoid": torch.sigmoid,
    "bilinear": lambda t: t,
    "reglu": F.relu,
    "geglu_erf": F.gelu,
    "geglu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "swiglu": F.silu,
}


class GLUFFN(nn.Module):
    def __init__(self, act: str, d: int = 16, f: int = 24, fused: bool = False):
        super().__init__()
        self.act_name, self.fused = act, fused
        if fused:   # W and V as one Linear d -> 2f, output chunked into halves
            self.wv = nn.Linear(d, 2 * f, bias=False)
            init_normal_(self.wv, 1.0 / math.sqrt(d))
        else:
            self.W = nn.Linear(d, f, bias=False)
            self.V = nn.Linear(d, f, bias=False)
            init_normal_(self.W, 1.0 / math.sqrt(d))
        self.W2 = nn.Linear(f, d, bias=False)

    def projections(self, x):
        if self.fused:
            a, b = torch.chunk(self.wv(x), 2, dim=-1)
            return a, b
        return self.W(x), self.V(x)

    def gate_values(self, x):
        return GLU_ACTS[self.act_name](self.projections(x)[0])

    def forward(self, x):
        a, b = self.projections(x)
        return self.W2(GLU_ACTS[self.act_name](a) * b)


# ---------------------------------------------------------------------------
# Seed 004: GatedBranch (verbatim), Flamingo, ReZero, LayerScale
# ---------------------------------------------------------------------------

class GatedBranch(nn.Module):
    """Wraps any sublayer f so the block starts as (almost) the identity."""
    def __init__(self, f: nn.Module, d_model: int, mode: str = "tanh"):
        super().__init__()
        self.f, self.mode = f, mode
        if mode == "tanh":          # Flamingo-style: one scalar, starts at exactly 0
            self.alpha = nn.Parameter(torch.zeros(1))
        elif mode == "layerscale":  # per-channel, starts small but non-zero
            self.alpha = nn.Parameter(torch.full((d_model,), 1e-4))
        else:                       # ReZero: one scalar, starts at 0
            self.alpha = nn.Parameter(torch.zeros(1))

    def forward(self, x, *args):
        scale = torch.tanh(self.alpha) if self.mode == "tanh" else self.alpha
        return x + scale * self.f(x, *args)


class CrossAttention(nn.Module):
    """Flamingo-style cross-attention: LayerNorm(x) -> q; media -> k, v (one
    Linear d -> 2d, chunked); softmax(q k^T / sqrt(dh)) v over all media
    tokens (no media mask); output Linear. Bias-free as in flamingo-pytorch."""

    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.norm = nn.LayerNorm(d)
        self.to_q = nn.Linear(d, d, bias=False)
        self.to_kv = nn.Linear(d, 2 * d, bias=False)
        self.to_out = nn.Linear(d, d, bias=False)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(d))
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x, media):                 # x [B, T, D], media [B, M, D]
        B, T, D = x.shape
        M = media.shape[1]
        x = self.norm(x)
        q = self.to_q(x).view(B, T, self.h, self.dh).transpose(1, 2)
        k, v = torch.chunk(self.to_kv(media), 2, dim=-1)
        k = k.view(B, M, self.h, self.dh).transpose(1, 2)
        v = v.view(B, M, self.h, self.dh).transpose(1, 2)
        probs = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dh), dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, D)
        return self.to_out(out)


class FeedForward(nn.Module):
    """LayerNorm -> Linear d -> mult*d -> GELU -> Linear back (flamingo-pytorch)."""

    def __init__(self, d: int = 32, mult: int = 2, bias: bool = False):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, mult * d, bias=bias)
        self.fc2 = nn.Linear(mult * d, d, bias=bias)
        with torch.no_grad():
            self.norm.weight.add_(0.2 * torch.randn(d))
            self.norm.bias.normal_(0.0, 0.1)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(self.norm(x))))


class FlamingoGatedXAttn(nn.Module):
    """x = x + tanh(alpha_attn) * xattn(x, media);  x = x + tanh(alpha_ffn) * ffn(x).
    The real initialisation is alpha = 0 (identity); here 0.3 and -0.2."""

    def __init__(self, d: int = 32, heads: int = 4):
        super().__init__()
        self.attn = GatedBranch(CrossAttention(d, heads), d, mode="tanh")
        self.ff = GatedBranch(FeedForward(d), d, mode="tanh")
        with torch.no_grad():
            self.attn.alpha.fill_(0.3)
            self.ff.alpha.fill_(-0.2)

    def forward(self, x, media):
        x = self.attn(x, media)
        return self.ff(x)


class Mlp(nn.Module):
    """f for ReZero / LayerScale: Linear -> ReLU -> Linear, with biases."""

    def __init__(self, d: int = 16, mult: int = 2):
        super().__init__()
        self.fc1 = nn.Linear(d, mult * d)
        self.fc2 = nn.Linear(mult * d, d)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ReZeroBlock(nn.Module):
    """x + alpha * f(x), alpha scalar (real init 0; here 0.25)."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.branch = GatedBranch(Mlp(d), d, mode="rezero")
        with torch.no_grad():
            self.branch.alpha.fill_(0.25)

    def forward(self, x):
        return self.branch(x)


class LayerScaleBlock(nn.Module):
    """x + gamma * f(x), gamma a d-vector (real init 1e-4; here ~0.1 random)."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.branch = GatedBranch(Mlp(d), d, mode="layerscale")
        with torch.no_grad():
            self.branch.alpha.copy_(0.1 * (1.0 + 0.5 * torch.randn(d)))

    def forward(self, x):
        return self.branch(x)


# ---------------------------------------------------------------------------
# Attention gate placements (seed 000): one causal self-attention layer
# ---------------------------------------------------------------------------

class PlacementAttention(nn.Module):
    """Causal self-attention, separate q/k/v/o projections (no bias), 4 heads,
    no norm, no RoPE, no residual. A separate gate Linear (with bias unless
    noted) reads the layer input x. Placements:
      g2_value  v = v_proj(x) * sigmoid(gate(x))   before attention
      g3_key    k = k_proj(x) * sigmoid(gate(x))
      g4_query  q = q_proj(x) * sigmoid(gate(x))
      g5_dense  o = o_proj(attn) * sigmoid(gate(x))
      g1_ns_sigmoid      y * (0.5 + 0.5 * sigmoid(gate(x)))   (y: attention output
      g1_silu            y * silu(gate(x))                     per head, before o_proj)
      g1_additive_silu   y + silu(gate(x))
      g1_headwise_nobias y * sigmoid(gate(x)), gate Linear d -> H without bias,
                         broadcast over head_dim"""

    def __init__(self, placement: str, d: int = 32, heads: int = 4):
        super().__init__()
        self.p, self.h, self.dh = placement, heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        headwise = placement == "g1_headwise_nobias"
        self.gate = nn.Linear(d, heads if headwise else d, bias=not headwise)
        init_normal_(self.gate, 1.0 / math.sqrt(d), 1.0)

    def gate_values(self, x):
        g = self.gate(x)
        if self.p == "g1_ns_sigmoid":
            return 0.5 + 0.5 * torch.sigmoid(g)
        if self.p in ("g1_silu", "g1_additive_silu"):
            return F.silu(g)
        return torch.sigmoid(g)

    def forward(self, x):                                    # x: [B, T, D]
        B, T, D = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        if self.p == "g2_value":
            v = v * torch.sigmoid(self.gate(x))
        elif self.p == "g3_key":
            k = k * torch.sigmoid(self.gate(x))
        elif self.p == "g4_query":
            q = q * torch.sigmoid(self.gate(x))
        q, k, v = (t.view(B, T, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        y = causal_attention(q, k, v, self.dh).transpose(1, 2)     # [B, T, H, dh]
        if self.p.startswith("g1_"):
            g = self.gate(x)
            if self.p == "g1_ns_sigmoid":
                y = y * (0.5 + 0.5 * torch.sigmoid(g)).view(B, T, self.h, self.dh)
            elif self.p == "g1_silu":
                y = y * F.silu(g).view(B, T, self.h, self.dh)
            elif self.p == "g1_additive_silu":
                y = y + F.silu(g).view(B, T, self.h, self.dh)
            elif self.p == "g1_headwise_nobias":
                y = y * torch.sigmoid(g).view(B, T, self.h, 1)
            else:
                raise ValueError(self.p)
        o = self.o_proj(y.reshape(B, T, D))
        if self.p == "g5_dense":
            o = o * torch.sigmoid(self.gate(x))
        return o


class GQARepeatInterleave(nn.Module):
    """GQA (4 query heads, 2 KV heads) where K/V heads are expanded with
    torch.repeat_interleave(n_rep, dim=1) (query head h uses KV head h // n_rep,
    the same mapping as HF repeat_kv), explicit causal attention, G1 elementwise
    sigmoid gate from x (Linear with bias), o_proj."""

    def __init__(self, d: int = 32, heads: int = 4, kv_heads: int = 2):
        super().__init__()
        self.h, self.hkv, self.dh = heads, kv_heads, d // heads
        self.n_rep = heads // kv_heads
        self.q_proj = nn.Linear(d, heads * self.dh, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o_proj = nn.Linear(heads * self.dh, d, bias=False)
        self.gate = nn.Linear(d, heads * self.dh, bias=True)
        init_normal_(self.gate, 1.0 / math.sqrt(d), 1.0)

    def gate_values(self, x):
        return torch.sigmoid(self.gate(x))

    def forward(self, x):
        B, T, D = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.hkv, self.dh).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.hkv, self.dh).transpose(1, 2)
        k = torch.repeat_interleave(k, self.n_rep, dim=1)
        v = torch.repeat_interleave(v, self.n_rep, dim=1)
        y = causal_attention(q, k, v, self.dh).transpose(1, 2)       # [B, T, H, dh]
        g = torch.sigmoid(self.gate(x)).view(B, T, self.h, self.dh)
        return self.o_proj((y * g).reshape(B, T, self.h * self.dh))


# ---------------------------------------------------------------------------
# onnx.helper graphs at opset 23 (not torch), with numpy references
# ---------------------------------------------------------------------------

def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _np_sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class HelperAttention23:
    """x [2, 8, 32] -> Q = x Wq (4 heads), K = x Wk, V = x Wv (2 KV heads, GQA),
    reshaped to 4-D [B, H, T, dh]; Attention-23 (is_causal=1, default scale
    1/sqrt(dh)); Y transposed back to [B, T, 32]; G1 gate Mul(Y, Sigmoid(x Wg));
    output MatMul(·, Wo)."""
    d, hq, hkv, dh = 32, 4, 2, 8

    def __init__(self, seed: int):
        r = _rng(seed)
        d, hq, hkv, dh = self.d, self.hq, self.hkv, self.dh
        s = 1.0 / math.sqrt(d)
        self.w = {
            "Wq": (r.standard_normal((d, hq * dh)) * s).astype(np.float32),
            "Wk": (r.standard_normal((d, hkv * dh)) * s).astype(np.float32),
            "Wv": (r.standard_normal((d, hkv * dh)) * s).astype(np.float32),
            "Wg": (r.standard_normal((d, hq * dh)) * s).astype(np.float32),
            "Wo": (r.standard_normal((hq * dh, d)) * s).astype(np.float32),
        }

    def model(self, dynamic: bool = False):
        from onnx import TensorProto, helper, numpy_helper
        d, hq, hkv, dh = self.d, self.hq, self.hkv, self.dh
        B, T = ("batch", "seq") if dynamic else (STATIC_B, STATIC_T)
        inits = [numpy_helper.from_array(v, k) for k, v in self.w.items()]
        inits += [
            numpy_helper.from_array(np.array([0, 0, hq, dh], np.int64), "shape_q"),
            numpy_helper.from_array(np.array([0, 0, hkv, dh], np.int64), "shape_kv"),
            numpy_helper.from_array(np.array([0, 0, hq * dh], np.int64), "shape_y"),
        ]
        N = helper.make_node
        nodes = [
            N("MatMul", ["x", "Wq"], ["q2"], name="q_proj"),
            N("Reshape", ["q2", "shape_q"], ["q3"], name="q_heads"),
            N("Transpose", ["q3"], ["q"], perm=[0, 2, 1, 3], name="q_bhtd"),
            N("MatMul", ["x", "Wk"], ["k2"], name="k_proj"),
            N("Reshape", ["k2", "shape_kv"], ["k3"], name="k_heads"),
            N("Transpose", ["k3"], ["k"], perm=[0, 2, 1, 3], name="k_bhtd"),
            N("MatMul", ["x", "Wv"], ["v2"], name="v_proj"),
            N("Reshape", ["v2", "shape_kv"], ["v3"], name="v_heads"),
            N("Transpose", ["v3"], ["v"], perm=[0, 2, 1, 3], name="v_bhtd"),
            N("Attention", ["q", "k", "v"], ["attn"], is_causal=1, name="attention"),
            N("Transpose", ["attn"], ["attn_t"], perm=[0, 2, 1, 3], name="attn_bthd"),
            N("Reshape", ["attn_t", "shape_y"], ["attn_y"], name="attn_merge"),
            N("MatMul", ["x", "Wg"], ["gate"], name="gate_proj"),
            N("Sigmoid", ["gate"], ["gate_sig"], name="gate_sigmoid"),
            N("Mul", ["attn_y", "gate_sig"], ["gated"], name="gate_mul"),
            N("MatMul", ["gated", "Wo"], ["y"], name="o_proj"),
        ]
        g = helper.make_graph(
            nodes, "onnx_attention23",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, d])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, T, d])],
            inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET_HELPER)],
                                 ir_version=IR_HELPER, producer_name="gatec_test")

    def reference(self, x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        w = {k: v.astype(np.float64) for k, v in self.w.items()}
        B, T, _ = x.shape
        q = (x @ w["Wq"]).reshape(B, T, self.hq, self.dh).transpose(0, 2, 1, 3)
        k = (x @ w["Wk"]).reshape(B, T, self.hkv, self.dh).transpose(0, 2, 1, 3)
        v = (x @ w["Wv"]).reshape(B, T, self.hkv, self.dh).transpose(0, 2, 1, 3)
        rep = self.hq // self.hkv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)  # head h -> h // rep
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(self.dh)
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        y = (p @ v).transpose(0, 2, 1, 3).reshape(B, T, self.hq * self.dh)
        return y * _np_sigmoid(x @ w["Wg"]) @ w["Wo"]


class HelperRMSNorm23:
    """x [2, 8, 16] -> RMSNormalization-23 (axis -1, epsilon 1e-5, scale
    1 + N(0, 0.2^2)) -> MatMul W [16, 16]."""
    d, eps = 16, 1e-5

    def __init__(self, seed: int):
        r = _rng(seed)
        self.scale = (1.0 + 0.2 * r.standard_normal(self.d)).astype(np.float32)
        self.W = (r.standard_normal((self.d, self.d)) / math.sqrt(self.d)).astype(np.float32)

    def model(self, dynamic: bool = False):
        from onnx import TensorProto, helper, numpy_helper
        B, T = ("batch", "seq") if dynamic else (STATIC_B, STATIC_T)
        N = helper.make_node
        nodes = [
            N("RMSNormalization", ["x", "scale"], ["xn"], axis=-1, epsilon=self.eps,
              name="rmsnorm"),
            N("MatMul", ["xn", "W"], ["y"], name="proj"),
        ]
        g = helper.make_graph(
            nodes, "onnx_rmsnorm23",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, T, self.d])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, T, self.d])],
            [numpy_helper.from_array(self.scale, "scale"), numpy_helper.from_array(self.W, "W")])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET_HELPER)],
                                 ir_version=IR_HELPER, producer_name="gatec_test")

    def reference(self, x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        xn = x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * self.scale
        return xn @ self.W.astype(np.float64)


# ---------------------------------------------------------------------------
# Model table
# ---------------------------------------------------------------------------

# Stable module name for every class: the TorchScript exporter may record it
# (e.g. in function domains), so files do not depend on how the script is run.
for _cls in (ReluSublayer, GTrXLInput, GTrXLOutput, GTrXLHighway, GTrXLSigTanh, GTrXLGRU,
             GLUFFN, GatedBranch, CrossAttention, FeedForward, FlamingoGatedXAttn, Mlp,
             ReZeroBlock, LayerScaleBlock, PlacementAttention, GQARepeatInterleave):
    _cls.__module__ = "gatec_test"

# name -> (seed, constructor, d_model, variants, kind); kind "torch" or "helper"
MODELS: dict = {
    "gtrxl_input":    (2001, lambda: GTrXLInput(16), 16, ("static",), "torch"),
    "gtrxl_output":   (2002, lambda: GTrXLOutput(16), 16, ("static", "dyn"), "torch"),
    "gtrxl_highway":  (2003, lambda: GTrXLHighway(16), 16, ("static",), "torch"),
    "gtrxl_sigtanh":  (2004, lambda: GTrXLSigTanh(16), 16, ("static",), "torch"),
    "gtrxl_gru":      (2005, lambda: GTrXLGRU(16), 16, ("static",), "torch"),
    "glu_sigmoid":    (2011, lambda: GLUFFN("sigmoid"), 16, ("static",), "torch"),
    "glu_bilinear":   (2012, lambda: GLUFFN("bilinear"), 16, ("static",), "torch"),
    "glu_reglu":      (2013, lambda: GLUFFN("reglu"), 16, ("static",), "torch"),
    "glu_geglu_erf":  (2014, lambda: GLUFFN("geglu_erf"), 16, ("static",), "torch"),
    "glu_geglu_tanh": (2015, lambda: GLUFFN("geglu_tanh"), 16, ("static",), "torch"),
    "glu_swiglu":     (2016, lambda: GLUFFN("swiglu"), 16, ("static", "dyn"), "torch"),
    "glu_swiglu_fused_proj": (2017, lambda: GLUFFN("swiglu", fused=True), 16, ("static",), "torch"),
    "flamingo_xattn": (2021, lambda: FlamingoGatedXAttn(32, 4), 32, ("static", "dyn"), "torch"),
    "rezero_block":   (2022, lambda: ReZeroBlock(16), 16, ("static",), "torch"),
    "layerscale_block": (2023, lambda: LayerScaleBlock(16), 16, ("static",), "torch"),
    "gate_g2_value":  (2031, lambda: PlacementAttention("g2_value"), 32, ("static", "dyn"), "torch"),
    "gate_g3_key":    (2032, lambda: PlacementAttention("g3_key"), 32, ("static",), "torch"),
    "gate_g4_query":  (2033, lambda: PlacementAttention("g4_query"), 32, ("static",), "torch"),
    "gate_g5_dense":  (2034, lambda: PlacementAttention("g5_dense"), 32, ("static",), "torch"),
    "g1_ns_sigmoid":  (2035, lambda: PlacementAttention("g1_ns_sigmoid"), 32, ("static",), "torch"),
    "g1_silu":        (2036, lambda: PlacementAttention("g1_silu"), 32, ("static",), "torch"),
    "g1_additive_silu": (2037, lambda: PlacementAttention("g1_additive_silu"), 32, ("static",), "torch"),
    "g1_headwise_nobias": (2038, lambda: PlacementAttention("g1_headwise_nobias"), 32, ("static",), "torch"),
    "gqa_repeat_interleave": (2041, lambda: GQARepeatInterleave(32, 4, 2), 32, ("static",), "torch"),
    "onnx_attention23": (2051, lambda: HelperAttention23(2051), 32, ("static",), "helper"),
    "onnx_rmsnorm23":   (2052, lambda: HelperRMSNorm23(2052), 16, ("static",), "helper"),
}


def build(name: str):
    seed, ctor, d, _, kind = MODELS[name]
    torch.manual_seed(seed)
    m = ctor()
    if kind == "torch":
        m = m.eval()
    return m, d


def input_names(name: str) -> list[str]:
    return ["x", "media"] if name == "flamingo_xattn" else ["x"]


def example_inputs(name: str, d: int, B: int, T: int, salt: int = 0,
                   M: int = MEDIA_T) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(MODELS[name][0] * 1000 + salt)
    x = torch.randn(B, T, d, generator=g)
    if name == "flamingo_xattn":
        return (x, torch.randn(B, M, d, generator=g))
    return (x,)


def file_name(name: str, variant: str) -> str:
    return {"static": f"{name}.onnx", "dyn": f"{name}_dyn.onnx"}[variant]


def export(name: str, variant: str) -> str:
    import onnx
    model, d = build(name)
    path = os.path.join(HERE, file_name(name, variant))
    if MODELS[name][4] == "helper":
        onnx.save_model(model.model(dynamic=variant == "dyn"), path)
        return path
    args = example_inputs(name, d, STATIC_B, STATIC_T)
    names = input_names(name)
    dyn = None
    if variant == "dyn":
        dyn = {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}
        if "media" in names:
            dyn["media"] = {0: "batch", 1: "media_seq"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, dynamo=False, opset_version=OPSET_TS,
                          input_names=names, output_names=["y"], dynamic_axes=dyn,
                          do_constant_folding=True)
    return path


# ---------------------------------------------------------------------------
# Verification of the exported models
# ---------------------------------------------------------------------------

def op_counter(model) -> collections.Counter:
    c = collections.Counter()
    for n in model.graph.node:
        c[n.op_type if not n.domain else f"{n.domain}::{n.op_type}"] += 1
    for f in model.functions:
        for n in f.node:
            c[n.op_type if not n.domain else f"{n.domain}::{n.op_type}"] += 1
    return c


def check(name: str, variant: str, path: str) -> list[str]:
    import onnx
    import onnxruntime as ort
    problems = []
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    model, d = build(name)
    helper_graph = MODELS[name][4] == "helper"
    shapes = [(STATIC_B, STATIC_T, MEDIA_T)]
    if variant == "dyn":
        shapes = [(b, t, m_) for b in (1, 2, 3) for t in (3, 8, 17) for m_ in (MEDIA_T,)]
        if name == "flamingo_xattn":   # the media length is dynamic too
            shapes += [(2, 8, 1), (3, 17, 9)]
    errs = []
    for i, (b, t, mt) in enumerate(shapes):
        args = example_inputs(name, d, b, t, salt=1 + i, M=mt)
        if helper_graph:
            ref = model.reference(args[0].numpy())
        else:
            with torch.no_grad():
                ref = model(*args).numpy()
        feeds = {n: a.numpy() for n, a in zip(input_names(name), args)}
        (got,) = sess.run(None, feeds)
        err = float(np.max(np.abs(got - ref)))
        errs.append(err)
        if got.shape != ref.shape or not err < TOL:
            problems.append(f"{os.path.basename(path)} B={b} T={t}: shape {got.shape} "
                            f"vs {ref.shape}, max abs err {err:.3g}")
        if not helper_graph and not np.all(np.isfinite(got)):
            problems.append(f"{os.path.basename(path)}: non-finite output")
    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    ref_kind = "numpy" if helper_graph else "torch"
    print(f"  {os.path.basename(path):30s} {os.path.getsize(path):7d} B  opset {opsets} "
          f"IR {m.ir_version}  shapes {len(shapes)}  max err vs {ref_kind} {max(errs):.2e}")
    print(f"    ops: {dict(sorted(op_counter(m).items()))}")
    return problems


def gate_stats(name: str) -> str:
    model, d = build(name)
    if not hasattr(model, "gate_values"):
        return ""
    (x, *_) = example_inputs(name, d, STATIC_B, STATIC_T)
    with torch.no_grad():
        g = model.gate_values(x)
    return (f"gate mean {g.mean():.3f} std {g.std():.3f} min {g.min():.3f} "
            f"max {g.max():.3f}")


# ---------------------------------------------------------------------------
# Seed worked examples -> seed_examples.json
# ---------------------------------------------------------------------------

SEED_002 = "shared/seeds/002_f3b78fccb2d87312.txt"
SEED_000 = "shared/seeds/000_efc30ca1101b70ab.txt"

# Printed values transcribed exactly from the seeds: (values, decimals printed).
# Each vector is printed with one number of decimals in the seed.
GTRXL_PRINTED = {
    # §1.2 standard residual x + y
    "standard_residual": ([1.3, 0.2, -0.2, 0.9], 1),
    # §3.4 input gating: sigma(W_g x) * x + y
    "W_g_x": ([0.26, -0.06, -0.23, 0.40], 2),
    "input.exp_neg_W_g_x": ([0.771, 1.062, 1.259, 0.670], 3),   # e^{-(W_g x)_i}
    "input.gate": ([0.565, 0.485, 0.443, 0.599], 3),
    "input.gate_times_x": ([0.565, -0.243, 0.089, 0.479], 3),
    "input.output": ([0.865, 0.457, -0.311, 0.579], 3),
    # §3.5 output gating: x + sigma(W_g x - b_g) * y
    "output.pre": ([-0.74, -1.06, -1.23, -0.60], 2),
    "output.gate": ([0.323, 0.257, 0.226, 0.354], 3),
    "output.gate_times_y": ([0.097, 0.180, -0.090, 0.035], 3),
    "output.output": ([1.097, -0.320, 0.110, 0.835], 3),
    # §3.6 highway: s * x + (1 - s) * y, s = sigma(W_g x + b_g)
    "highway.pre": ([1.26, 0.94, 0.77, 1.40], 2),
    "highway.s": ([0.779, 0.719, 0.684, 0.802], 3),
    "highway.one_minus_s": ([0.221, 0.281, 0.316, 0.198], 3),
    "highway.s_times_x": ([0.779, -0.360, 0.137, 0.642], 3),
    "highway.one_minus_s_times_y": ([0.066, 0.197, -0.126, 0.020], 3),
    "highway.output": ([0.845, -0.163, 0.011, 0.662], 3),
    # §4.3 gated identity initialisation, gate at W_g x = 0
    "sigmoid_minus_2": ([0.119], 3),
    "sigmoid_minus_1": ([0.269], 3),
}

GLU_PRINTED = {   # §7.3, row vectors, d = 4, d_ff = 3
    "xW": ([0.62, -0.46, 0.58], 2),
    "sigmoid_xW": ([0.650, 0.387, 0.641], 3),
    "xV": ([-0.65, 0.73, -0.05], 2),
    "glu": ([-0.423, 0.283, -0.032], 3),
}

G1_PRINTED = {    # §8.1 two-token example
    "retrieved": ([0.8, 2.2], 1),
    "gated": ([0.08, 1.76], 2),
}

# Printed seed numbers that are NOT the exact value rounded to the printed
# decimals (each entry: "example.key[index]"). The check fails if this list
# is incomplete or names a value that does reproduce.
KNOWN_SEED_MISMATCHES = {
    # The seed multiplies values already rounded to 3 decimals and adds the
    # rounded products, so a few printed digits differ from the exact result.
    "gtrxl.highway.one_minus_s_times_y[2]":
        "seed: 0.316 * -0.4 = -0.1264 -> -0.126; exact (1 - sigmoid(0.77)) * -0.4 = -0.126592 -> -0.127",
    "gtrxl.highway.output[2]":
        "seed: 0.137 - 0.126 = 0.011; exact sigmoid(0.77)*0.2 + (1 - sigmoid(0.77))*-0.4 = 0.010113 -> 0.010",
    "glu.glu[1]":
        "seed: 0.387 * 0.73 = 0.28251 -> 0.283; exact sigmoid(-0.46) * 0.73 = 0.2824997 -> 0.282",
}


def seed_examples() -> tuple[dict, list[str]]:
    """Recompute every printed number in float64 from the seed inputs."""
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))
    x = np.array([1.0, -0.5, 0.2, 0.8])
    y = np.array([0.3, 0.7, -0.4, 0.1])
    Wg = np.array([[0.1, -0.2, 0.3, 0.0],
                   [0.0, 0.4, -0.1, 0.2],
                   [-0.3, 0.1, 0.2, 0.1],
                   [0.2, 0.0, -0.2, 0.3]])
    bg = np.array([1.0, 1.0, 1.0, 1.0])
    wx = Wg @ x
    s = sig(wx + bg)
    gtrxl_exact = {
        "standard_residual": x + y,
        "W_g_x": wx,
        "input.exp_neg_W_g_x": np.exp(-wx),
        "input.gate": sig(wx),
        "input.gate_times_x": sig(wx) * x,
        "input.output": sig(wx) * x + y,
        "output.pre": wx - bg,
        "output.gate": sig(wx - bg),
        "output.gate_times_y": sig(wx - bg) * y,
        "output.output": x + sig(wx - bg) * y,
        "highway.pre": wx + bg,
        "highway.s": s,
        "highway.one_minus_s": 1 - s,
        "highway.s_times_x": s * x,
        "highway.one_minus_s_times_y": (1 - s) * y,
        "highway.output": s * x + (1 - s) * y,
        "sigmoid_minus_2": np.array([sig(-2.0)]),
        "sigmoid_minus_1": np.array([sig(-1.0)]),
    }
    xr = np.array([1.0, -0.5, 0.2, 0.8])
    W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.2], [-0.1, 0.6, 0.3], [0.3, -0.1, 0.4]])
    V = np.array([[-0.2, 0.4, 0.1], [0.3, -0.1, 0.5], [0.1, 0.2, -0.3], [-0.4, 0.3, 0.2]])
    glu_exact = {"xW": xr @ W, "sigmoid_xW": sig(xr @ W), "xV": xr @ V,
                 "glu": sig(xr @ W) * (xr @ V)}
    a = np.array([0.4, 0.6])
    vals = np.array([[2.0, 1.0], [0.0, 3.0]])
    gate = np.array([0.1, 0.8])
    g1_exact = {"retrieved": a @ vals, "gated": (a @ vals) * gate}

    found = {}

    def section(prefix, printed, exact):
        out = {}
        for key, (vals_p, dec) in printed.items():
            ex = exact[key]
            assert len(ex) == len(vals_p), key
            ok = []
            for i, (p, e) in enumerate(zip(vals_p, ex)):
                # printed == exact rounded to `dec` decimals (half-ulp slack)
                good = abs(e - p) <= 0.5 * 10.0 ** (-dec) + 1e-12
                ok.append(bool(good))
                if not good:
                    found[f"{prefix}.{key}[{i}]"] = (p, float(e), dec)
            out[key] = {"printed": vals_p, "decimals": dec,
                        "exact": [round(float(e), 12) for e in ex],
                        "reproduced": ok}
        return out

    data = {
        "_about": ("Worked numeric examples of the seed documents, transcribed exactly. "
                   "'printed' is the value as printed in the seed with 'decimals' decimals; "
                   "'exact' is the float64 recomputation from the inputs (rounded to 12 "
                   "decimals); 'reproduced' says whether round(exact, decimals) == printed. "
                   "Written by test/models/export_gate_models.py."),
        "gtrxl": {
            "source": SEED_002 + " §1.2, §3.3-3.6, §4.3 (the running example, d = 4)",
            "convention": "column vectors: W_g x; gate inputs W_g x - b_g (output), W_g x + b_g (highway), W_g x (input, no bias)",
            "x": x.tolist(), "y": y.tolist(), "W_g": Wg.tolist(), "b_g": bg.tolist(),
            "formulas": {
                "standard_residual": "x + y",
                "input": "sigmoid(W_g x) * x + y",
                "output": "x + sigmoid(W_g x - b_g) * y",
                "highway": "s * x + (1 - s) * y, s = sigmoid(W_g x + b_g)",
                "sigmoid_minus_b": "sigmoid(-b) for b = 2 and b = 1 (gated identity init)",
            },
            "values": section("gtrxl", GTRXL_PRINTED, gtrxl_exact),
        },
        "glu": {
            "source": SEED_002 + " §7.3 (d = 4, d_ff = 3)",
            "convention": "row vector x, GLU(x) = sigmoid(x W) * (x V)",
            "x": xr.tolist(), "W": W.tolist(), "V": V.tolist(),
            "values": section("glu", GLU_PRINTED, glu_exact),
        },
        "g1_two_token": {
            "source": SEED_000 + " §8.1 (constructed two-token example)",
            "convention": "retrieved = sum_j a_j v_j; gated = retrieved * gate (elementwise)",
            "softmax_weights": {"printed": a.tolist(), "decimals": 1},
            "values_per_token": {"printed": vals.tolist(), "decimals": 0},
            "gate": {"printed": gate.tolist(), "decimals": 1},
            "values": section("g1_two_token", G1_PRINTED, g1_exact),
        },
        "not_reproduced": {k: {"printed": p, "exact": round(e, 12), "decimals": dec,
                               "why": KNOWN_SEED_MISMATCHES.get(k, "UNEXPECTED")}
                           for k, (p, e, dec) in sorted(found.items())},
    }
    problems = []
    for k in sorted(found):
        if k not in KNOWN_SEED_MISMATCHES:
            problems.append(f"seed value {k}: printed {found[k][0]} but exact "
                            f"{found[k][1]:.6f} (decimals {found[k][2]})")
    for k in sorted(KNOWN_SEED_MISMATCHES):
        if k not in found:
            problems.append(f"seed value {k} listed as a mismatch but it reproduces")
    return data, problems


def write_seed_examples() -> list[str]:
    data, problems = seed_examples()
    path = os.path.join(HERE, "seed_examples.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    n = sum(len(v["printed"]) for sec in ("gtrxl", "glu", "g1_two_token")
            for v in data[sec]["values"].values())
    print(f"seed_examples.json: {os.path.getsize(path)} B, {n} printed values checked, "
          f"not reproduced: {sorted(data['not_reproduced'])}")
    return problems


# ---------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", dest="check", action="store_true", default=True,
                    help="verify with onnx.checker and onnxruntime (default)")
    ap.add_argument("--no-check", dest="check", action="store_false")
    ap.add_argument("--only", nargs="*", help="model names to export (default: all)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    import onnx
    print(f"torch {torch.__version__}  onnx {onnx.__version__}  -> {HERE}")
    problems = write_seed_examples()
    for name, (_, _, _, variants, _) in MODELS.items():
        if args.only and name not in args.only:
            continue
        print(f"{name}: {gate_stats(name) if MODELS[name][4] == 'torch' else 'onnx.helper graph'}")
        for variant in variants:
            try:
                path = export(name, variant)
            except Exception as e:
                problems.append(f"{name} [{variant}] export failed: {type(e).__name__}: {e}")
                print(f"  {file_name(name, variant)}: EXPORT FAILED ({type(e).__name__}: {e})")
                continue
            if args.check:
                try:
                    problems += check(name, variant, path)
                except Exception as e:
                    problems.append(f"{name} [{variant}] check failed: {type(e).__name__}: {e}")
                    print(f"  {os.path.basename(path)}: CHECK FAILED ({type(e).__name__}: {e})")
            else:
                digest = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
                print(f"  {os.path.basename(path)} sha256 {digest}")
    if problems:
        print("PROBLEMS:")
        for p in problems:
            print("  " + p)
        return 1
    print("all OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
