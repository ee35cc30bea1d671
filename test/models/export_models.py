#!/usr/bin/env python3
"""Export the small ONNX test models of gatec's end-to-end tests.

Every model is a tiny PyTorch module with random (fixed-seed) weights, written
from the seed documents in shared/seeds/ (gated attention G1, elementwise and
headwise) and from the Llama / Qwen3-Next reference code in transformers.
Gate weights and biases are initialised so that gates are clearly not identity
(sigmoid values spread over roughly (0.05, 0.95)).

Files are written next to this script, whatever the current directory:

  <name>.onnx         TorchScript exporter (dynamo=False), opset 17, static
                      shapes [2, 8, d_model]
  <name>_dyn.onnx     TorchScript exporter, opset 17, dims 0/1 dynamic
                      ("batch", "seq")
  <name>_dynamo.onnx  dynamo exporter (torch.export + onnxscript), static,
                      opset 18, weights inside the file; the per-node
                      stack-trace metadata (absolute paths) is removed
  <name>_fn.onnx      TorchScript exporter, opset 17, static, with
                      export_modules_as_functions: RMSNorm modules become
                      model-local functions (model.functions)

With --check (the default) every file is checked with onnx.checker and run with
onnxruntime against the PyTorch module (max abs error must be < 1e-4); the
_dyn files are also run at batch 1/2/3 and seq 3/8/17.

Regenerate:  /tmp/torchenv/bin/python test/models/export_models.py
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET_TS = 17      # TorchScript exporter; ONNX C++ 1.12 (Debian) knows opset <= 17
OPSET_DYNAMO = 18  # the dynamo exporter's lowest native opset (no version conversion)
STATIC_B, STATIC_T = 2, 8
TOL = 1e-4


# ---------------------------------------------------------------------------
# Helpers shared by the modules
# ---------------------------------------------------------------------------

def init_gate_(lin: nn.Linear, w_std: float, b_std: float) -> None:
    """Gate projections: weights large enough that the gate depends on the
    input, a random non-zero bias so sigmoid(gate) is neither ~0.5 nor ~1."""
    with torch.no_grad():
        lin.weight.normal_(0.0, w_std)
        if lin.bias is not None:
            lin.bias.normal_(0.0, b_std)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """HF transformers' rotate_half."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """HF transformers' repeat_kv: [B, Hkv, T, dh] -> [B, Hkv*n_rep, T, dh]
    via expand + reshape (query head h uses KV head h // n_rep)."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(
        batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


# ---------------------------------------------------------------------------
# 1, 2. Seed 004 GatedSelfAttention (G1 output gate), explicit attention math
# ---------------------------------------------------------------------------

class GatedSelfAttention(nn.Module):
    """Seed 004: causal self-attention, sigmoid gate on the attention output
    per head before the output projection (G1). Elementwise: gate Linear
    d -> H*dh; headwise: d -> H, broadcast over head_dim. The attention is
    written out (matmul, scale, masked_fill with a tril mask, softmax, matmul)
    unless use_sdpa, which keeps the seed's F.scaled_dot_product_attention.
    head_major applies the gate to the attention output in its [B, H, T, dh]
    layout, before the heads are transposed back (same maths)."""

    def __init__(self, d_model: int, n_heads: int, headwise: bool = False,
                 use_sdpa: bool = False, head_major: bool = False):
        super().__init__()
        self.h, self.dh = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.gate = nn.Linear(d_model, n_heads if headwise else d_model, bias=True)
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.headwise = headwise
        self.use_sdpa = use_sdpa
        self.head_major = head_major
        init_gate_(self.gate, w_std=1.0 / math.sqrt(d_model), b_std=1.0)

    def gate_values(self, x):
        return torch.sigmoid(self.gate(x))

    def forward(self, x):                                    # x: [B, T, D]
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))     # [B, H, T, dh]
        if self.use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dh)
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
            scores = scores.masked_fill(~causal, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            y = torch.matmul(probs, v)                       # [B, H, T, dh]
        g = torch.sigmoid(self.gate(x))                      # query-dependent
        g = g.view(B, T, self.h, 1) if self.headwise else g.view(B, T, self.h, self.dh)
        if self.head_major:
            return self.out((y * g.transpose(1, 2)).transpose(1, 2).reshape(B, T, D))
        y = y.transpose(1, 2)                                # [B, T, H, dh]
        return self.out((y * g).reshape(B, T, D))


# ---------------------------------------------------------------------------
# 3. Llama-style decoder block (HF LlamaDecoderLayer, written out)
# ---------------------------------------------------------------------------

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaBlock(nn.Module):
    """Pre-norm decoder block: x + attn(rmsnorm(x)); h + mlp(rmsnorm(h)).
    Attention: GQA (Hq query heads, Hkv KV heads, repeat_kv), RoPE in the
    rotate_half form with cos/sin computed in forward from arange(T), additive
    causal mask built with torch.triu, softmax. MLP: SwiGLU
    down(silu(gate(x)) * up(x))."""

    def __init__(self, hidden: int = 64, n_heads: int = 4, n_kv_heads: int = 2,
                 intermediate: int = 96, rope_theta: float = 10000.0, eps: float = 1e-6):
        super().__init__()
        self.hq, self.hkv = n_heads, n_kv_heads
        self.dh = hidden // n_heads
        self.n_rep = n_heads // n_kv_heads
        self.input_layernorm = LlamaRMSNorm(hidden, eps)
        self.post_attention_layernorm = LlamaRMSNorm(hidden, eps)
        self.q_proj = nn.Linear(hidden, n_heads * self.dh, bias=False)
        self.k_proj = nn.Linear(hidden, n_kv_heads * self.dh, bias=False)
        self.v_proj = nn.Linear(hidden, n_kv_heads * self.dh, bias=False)
        self.o_proj = nn.Linear(n_heads * self.dh, hidden, bias=False)
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)
        inv_freq = 1.0 / (rope_theta ** (torch.arange(0, self.dh, 2, dtype=torch.float32) / self.dh))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        with torch.no_grad():   # non-trivial norm weights
            self.input_layernorm.weight.add_(0.2 * torch.randn(hidden))
            self.post_attention_layernorm.weight.add_(0.2 * torch.randn(hidden))
            # SwiGLU gate: make silu(gate(x)) cover both its negative dip and linear part
            self.gate_proj.weight.normal_(0.0, 1.0 / math.sqrt(hidden))

    def gate_values(self, x):
        return F.silu(self.gate_proj(self.post_attention_layernorm(x)))

    def rope(self, T: int, device):
        position_ids = torch.arange(T, device=device, dtype=torch.float32)
        freqs = torch.outer(position_ids, self.inv_freq)     # [T, dh/2]
        emb = torch.cat((freqs, freqs), dim=-1)              # [T, dh]
        return emb.cos(), emb.sin()

    def attention(self, x):
        input_shape = x.shape[:-1]
        B, T = input_shape
        hidden_shape = (*input_shape, -1, self.dh)
        q = self.q_proj(x).view(hidden_shape).transpose(1, 2)   # [B, Hq, T, dh]
        k = self.k_proj(x).view(hidden_shape).transpose(1, 2)   # [B, Hkv, T, dh]
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        cos, sin = self.rope(T, x.device)
        cos, sin = cos[None, None], sin[None, None]              # unsqueeze_dim=1
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = repeat_kv(k, self.n_rep)
        v = repeat_kv(v, self.n_rep)
        scores = torch.matmul(q, k.transpose(2, 3)) * (self.dh ** -0.5)
        mask = torch.triu(torch.full((T, T), torch.finfo(x.dtype).min,
                                     dtype=x.dtype, device=x.device), diagonal=1)
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).contiguous()   # [B, T, Hq, dh]
        out = out.reshape(*input_shape, -1)
        return self.o_proj(out)

    def mlp(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    def forward(self, x):
        h = x + self.attention(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))


# ---------------------------------------------------------------------------
# 4. Qwen3-Next gated attention (HF Qwen3NextAttention, without RoPE)
# ---------------------------------------------------------------------------

class Qwen3NextRMSNorm(nn.Module):
    """Zero-centred RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        output = output * (1.0 + self.weight.float())
        return output.type_as(x)


class Qwen3NextGatedAttention(nn.Module):
    """q_proj emits 2*Hq*dh features viewed as [B, T, Hq, 2*dh]; per head the
    first dh are the query and the last dh the gate (interleaved per head).
    q_norm / k_norm on head_dim, GQA with repeat_kv, causal softmax attention
    (mask built with torch.tril and applied with torch.where), output
    attn * sigmoid(gate), then o_proj. The real layer also applies partial
    RoPE (25% of head_dim) between the norms and the attention; omitted here."""

    def __init__(self, hidden: int = 64, n_heads: int = 4, n_kv_heads: int = 2,
                 head_dim: int = 16, eps: float = 1e-6):
        super().__init__()
        self.hq, self.hkv, self.head_dim = n_heads, n_kv_heads, head_dim
        self.n_rep = n_heads // n_kv_heads
        self.scaling = head_dim ** -0.5
        self.q_proj = nn.Linear(hidden, n_heads * head_dim * 2, bias=False)
        self.k_proj = nn.Linear(hidden, n_kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, n_kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(n_heads * head_dim, hidden, bias=False)
        self.q_norm = Qwen3NextRMSNorm(head_dim, eps)
        self.k_norm = Qwen3NextRMSNorm(head_dim, eps)
        with torch.no_grad():
            self.q_norm.weight.normal_(0.0, 0.2)
            self.k_norm.weight.normal_(0.0, 0.2)
            # gate rows of q_proj (second half of each head's 2*dh block): larger
            # weights plus a per-channel offset so sigmoid(gate) is spread out.
            # (No bias in q_proj, as in Qwen3-Next; the offset comes from the weights.)
            w = self.q_proj.weight.view(n_heads, 2, head_dim, hidden)
            w[:, 1].normal_(0.0, 1.5 / math.sqrt(hidden))

    def split(self, x):
        input_shape = x.shape[:-1]
        query_states, gate = torch.chunk(
            self.q_proj(x).view(*input_shape, -1, self.head_dim * 2), 2, dim=-1)
        gate = gate.reshape(*input_shape, -1)
        return query_states, gate

    def gate_values(self, x):
        return torch.sigmoid(self.split(x)[1])

    def forward(self, x):
        input_shape = x.shape[:-1]
        T = x.shape[1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states, gate = self.split(x)
        q = self.q_norm(query_states.view(hidden_shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(hidden_shape)).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        k = repeat_kv(k, self.n_rep)
        v = repeat_kv(v, self.n_rep)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device))
        scores = torch.where(causal, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).contiguous()
        out = out.reshape(*input_shape, -1).contiguous()
        out = out * torch.sigmoid(gate)
        return self.o_proj(out)


# ---------------------------------------------------------------------------
# Model table
# ---------------------------------------------------------------------------

# Stable module name for every class above: the TorchScript exporter uses it as
# the domain of model-local functions and the dynamo exporter records it in node
# metadata, so the files do not depend on how this script is invoked.
for _cls in (GatedSelfAttention, LlamaRMSNorm, LlamaBlock, Qwen3NextRMSNorm,
             Qwen3NextGatedAttention):
    _cls.__module__ = "gatec_test"

# name -> (seed, constructor, d_model, variants)
MODELS = {
    "gated_attn_elementwise": (1001, lambda: GatedSelfAttention(32, 4, headwise=False),
                               32, ("static", "dyn", "dynamo")),
    "gated_attn_headwise":    (1002, lambda: GatedSelfAttention(32, 4, headwise=True),
                               32, ("static", "dyn")),
    "llama_block":            (1003, lambda: LlamaBlock(64, 4, 2, 96),
                               64, ("static", "dyn", "dynamo", "fn")),
    "qwen3next_gated_attn":   (1004, lambda: Qwen3NextGatedAttention(64, 4, 2, 16),
                               64, ("static", "dyn")),
    "sdpa_attn":              (1005, lambda: GatedSelfAttention(32, 4, headwise=False, use_sdpa=True),
                               32, ("static",)),
    "gated_attn_head_major":  (1006, lambda: GatedSelfAttention(32, 4, headwise=False,
                                                                use_sdpa=True, head_major=True),
                               32, ("static", "dyn")),
    "gated_attn_headwise_head_major": (1007, lambda: GatedSelfAttention(
        32, 4, headwise=True, head_major=True), 32, ("static",)),
}


def build(name: str) -> tuple[nn.Module, int]:
    seed, ctor, d, _ = MODELS[name]
    torch.manual_seed(seed)
    m = ctor().eval()
    return m, d


def example_input(name: str, d: int, B: int, T: int, salt: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(MODELS[name][0] * 1000 + salt)
    return torch.randn(B, T, d, generator=g)


def file_name(name: str, variant: str) -> str:
    return {"static": f"{name}.onnx", "dyn": f"{name}_dyn.onnx",
            "dynamo": f"{name}_dynamo.onnx", "fn": f"{name}_fn.onnx"}[variant]


def strip_stack_traces(proto) -> None:
    """Drop the dynamo exporter's per-node Python stack traces: they hold
    absolute paths of this script and of the venv (not deterministic)."""
    def strip(props):
        keep = [p for p in props if p.key != "pkg.torch.onnx.stack_trace"]
        del props[:]
        props.extend(keep)
    graphs = [proto.graph] + list(proto.functions)
    for g in graphs:
        for n in g.node:
            strip(n.metadata_props)
    strip(proto.metadata_props)


def export(name: str, variant: str) -> str:
    import onnx
    model, d = build(name)
    x = example_input(name, d, STATIC_B, STATIC_T)
    path = os.path.join(HERE, file_name(name, variant))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if variant in ("static", "dyn", "fn"):
            dyn = {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}} \
                if variant == "dyn" else None
            fns = {LlamaRMSNorm, Qwen3NextRMSNorm} if variant == "fn" else False
            torch.onnx.export(model, (x,), path, dynamo=False, opset_version=OPSET_TS,
                              input_names=["x"], output_names=["y"], dynamic_axes=dyn,
                              do_constant_folding=True, export_modules_as_functions=fns)
        else:
            prog = torch.onnx.export(model, (x,), dynamo=True, opset_version=OPSET_DYNAMO,
                                     input_names=["x"], output_names=["y"],
                                     external_data=False, verbose=False)
            proto = prog.model_proto
            strip_stack_traces(proto)
            # keep every weight inside the file
            onnx.save_model(proto, path, save_as_external_data=False)
    return path


# ---------------------------------------------------------------------------
# Verification
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
    shapes = [(STATIC_B, STATIC_T)]
    if variant == "dyn":
        shapes = [(b, t) for b in (1, 2, 3) for t in (3, 8, 17)]
    errs = []
    for i, (b, t) in enumerate(shapes):
        x = example_input(name, d, b, t, salt=1 + i)
        with torch.no_grad():
            ref = model(x).numpy()
        (got,) = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
        err = float(np.max(np.abs(got - ref)))
        errs.append(err)
        if got.shape != ref.shape or not err < TOL:
            problems.append(f"{os.path.basename(path)} B={b} T={t}: shape {got.shape} "
                            f"vs {ref.shape}, max abs err {err:.3g}")
    opsets = {o.domain or "ai.onnx": o.version for o in m.opset_import}
    print(f"  {os.path.basename(path):34s} {os.path.getsize(path):7d} B  opset {opsets}  "
          f"functions {len(m.functions)}  shapes {len(shapes)}  max err {max(errs):.2e}")
    print(f"    ops: {dict(sorted(op_counter(m).items()))}")
    return problems


def gate_stats(name: str) -> str:
    model, d = build(name)
    x = example_input(name, d, STATIC_B, STATIC_T)
    with torch.no_grad():
        g = model.gate_values(x)
    return (f"gate mean {g.mean():.3f} std {g.std():.3f} min {g.min():.3f} "
            f"max {g.max():.3f} frac<0.1 {(g < 0.1).float().mean():.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", dest="check", action="store_true", default=True,
                    help="verify with onnx.checker and onnxruntime (default)")
    ap.add_argument("--no-check", dest="check", action="store_false")
    ap.add_argument("--no-dynamo", action="store_true",
                    help="skip the _dynamo.onnx files")
    ap.add_argument("--only", nargs="*", help="model names to export (default: all)")
    args = ap.parse_args()

    torch.set_num_threads(1)
    import onnx
    print(f"torch {torch.__version__}  onnx {onnx.__version__}  -> {HERE}")
    problems = []
    for name, (_, _, _, variants) in MODELS.items():
        if args.only and name not in args.only:
            continue
        print(f"{name}: {gate_stats(name)}")
        for variant in variants:
            if variant == "dynamo" and args.no_dynamo:
                continue
            try:
                path = export(name, variant)
            except Exception as e:  # dynamo export is optional
                problems.append(f"{name} [{variant}] export failed: {type(e).__name__}: {e}")
                print(f"  {file_name(name, variant)}: EXPORT FAILED ({type(e).__name__})")
                continue
            if args.check:
                try:
                    problems += check(name, variant, path)
                except Exception as e:
                    problems.append(f"{name} [{variant}] check failed: {type(e).__name__}: {e}")
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
