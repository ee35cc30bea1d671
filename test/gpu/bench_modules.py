"""The blocks of the GPU benchmark (test/gpu/run_gpu.py), shared by prepare.py
(which turns them into ONNX models for gatec) and run_gpu.py (which runs the
PyTorch peers on the same weights and inputs).

  bench_gated_attn    G1 elementwise sigmoid gate on the attention output of
                      a self-attention block (seed 004;
                      test/models/export_models.GatedSelfAttention), x -> y
  bench_ungated_attn  the same block with the gate removed: the gate's
                      overhead is gated time / ungated time
  bench_sdpa          causal attention alone, q, k, v [B, H, T, 64] -> y:
                      gatec's attention kernel against torch's
                      scaled_dot_product_attention (FlashAttention on a GPU)
  bench_sdpa_gated    the same with the G1 gate sigmoid(g) * attention
                      (g [B, H, T, 64]): the gate fused in the epilogue
  bench_gla           gated linear attention with a per-head decay (simple
                      GLA / Mamba2 style; ONNX LinearAttention-27,
                      update_rule "gated"), q, k, v [B, T, H*64], log-decay
                      [B, T, H] -> output: gatec's chunked kernel against a
                      PyTorch chunked form, torch.compile of it, and
                      flash-linear-attention's chunk_simple_gla where the GPU
                      machine has it
  bench_swiglu_bf16   a bf16 SwiGLU feed-forward block (d_model 512, hidden
                      1024; x and y fp32 at the interface, cast inside), the
                      GEMMs on the fp32 units (gatec's default)
  bench_swiglu_bf16_mma
                      the same library compiled with --gpu-mma (the GEMMs as
                      mma.sync on the tensor cores): the tensor cores' gain
                      is the ratio of the two rows; TFLOP/s against the bf16
                      GEMM peak

Self-attention blocks: d_model 256, 4 heads of 64, dynamic batch and
sequence. Weights are saved by prepare.py (state_dict as .npz) and loaded by
run_gpu.py, so both sides use the same numbers whatever torch's version.
Inputs are drawn on the GPU machine from seeds (numpy's PCG64 is the same
everywhere), through each input's `draw`.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
import export_models as em  # noqa: E402

D_MODEL, HEADS, HEAD_DIM = 256, 4, 64
# Suffix of a weight saved as its bf16 bits (int16) in the .npz files.
BF16_BITS = "@bf16"
FFN_D, FFN_H = 512, 1024  # small: the artifacts travel to the GPU machine
GLA_CHUNK = 64


class UngatedSelfAttention(em.GatedSelfAttention):
    """GatedSelfAttention without its gate (the baseline of the overhead)."""

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, D))


class SdpaGatedSelfAttention(em.GatedSelfAttention):
    """The gated block with torch's fused SDPA kernel (the fair peer on a
    GPU); same weights and maths as the exported, written-out form."""

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        g = torch.sigmoid(self.gate(x)).view(B, T, self.h, self.dh)
        return self.out((y.transpose(1, 2) * g).reshape(B, T, D))


class Sdpa(torch.nn.Module):
    """Causal attention through torch's SDPA (the opset-17 exporter writes
    it out as MatMul/Softmax, which gatec raises back into one attention)."""

    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


class SdpaGated(torch.nn.Module):
    def forward(self, q, k, v, g):
        return torch.sigmoid(g) * torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True)


class ChunkedSimpleGla(torch.nn.Module):
    """Gated linear attention with a per-head scalar log-decay in the chunked
    form (Yang et al., "Gated Linear Attention Transformers with
    Hardware-Efficient Training", 2024, section 4), in plain PyTorch: the
    peer for eager and torch.compile. Every exponent is a non-positive
    difference of cumulative log-decays. Inputs in ONNX LinearAttention's
    layout: q, k, v [B, T, H*D], g [B, T, H]."""

    def forward(self, q, k, v, g):
        B, T, _ = q.shape
        H, D = HEADS, HEAD_DIM
        C = GLA_CHUNK
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        g = g.transpose(1, 2)  # [B, H, T]
        scale = D ** -0.5
        S = q.new_zeros(B, H, D, D)
        out = []
        causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
        for s in range(0, T, C):
            qc, kc, vc = q[:, :, s:s + C], k[:, :, s:s + C], v[:, :, s:s + C]
            G = g[:, :, s:s + C].cumsum(-1)  # [B, H, c]
            c = G.shape[-1]
            diff = (G[..., :, None] - G[..., None, :]).masked_fill(~causal[:c, :c], float("-inf"))
            A = (qc @ kc.transpose(-1, -2)) * diff.exp()
            o = A @ vc + (qc * G[..., None].exp()) @ S
            out.append(o * scale)
            last = G[..., -1:]
            S = last[..., None].exp() * S + (kc * (last - G)[..., None].exp()).transpose(-1, -2) @ vc
        return torch.cat(out, 2).transpose(1, 2).reshape(B, T, H * D)


class Bf16SwiGLU(torch.nn.Module):
    """SwiGLU FFN, W2(silu(W1 x) * W3 x) (Shazeer, "GLU Variants Improve
    Transformer", 2020), with bf16 weights and activations; fp32 in and out
    so that the benchmark's inputs and outputs stay numpy-friendly."""

    def __init__(self, d=FFN_D, h=FFN_H):
        super().__init__()
        self.w1 = torch.nn.Linear(d, h, bias=False)
        self.w3 = torch.nn.Linear(d, h, bias=False)
        self.w2 = torch.nn.Linear(h, d, bias=False)
        self.to(torch.bfloat16)

    def forward(self, x):
        x = x.to(torch.bfloat16)
        y = self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))
        return y.float()


def fla_simple_gla():
    """flash-linear-attention's chunk_simple_gla as a peer taking the ONNX
    layout, or (None, reason) where it is not installed or cannot run."""
    try:
        from fla.ops.simple_gla import chunk_simple_gla
    except Exception as e:  # ImportError, or triton missing
        return None, "flash-linear-attention not available (%s)" % e

    def run(q, k, v, g):
        B, T, _ = q.shape
        q, k, v = (t.view(B, T, HEADS, HEAD_DIM) for t in (q, k, v))
        o, _ = chunk_simple_gla(q, k, v, g, scale=HEAD_DIM ** -0.5)
        return o.reshape(B, T, HEADS * HEAD_DIM)
    return run, None


def _normal(shape, rng):
    return rng.standard_normal(shape).astype(np.float32)


def _log_decay(shape, rng):
    """log(sigmoid(a)) with a ~ N(2, 1): decays around 0.9 per token."""
    a = rng.standard_normal(shape) + 2.0
    return (-np.logaddexp(0.0, -a)).astype(np.float32)


def _unit_rows(shape, rng):
    """L2-normalised rows (keys and queries of linear attention are
    normalised in practice; keeps the state bounded)."""
    a = rng.standard_normal(shape)
    a = a.reshape(shape[:-1] + (HEADS, HEAD_DIM))
    a /= np.linalg.norm(a, axis=-1, keepdims=True)
    return a.reshape(shape).astype(np.float32)


def _attn_flops(b, t):
    return 2 * 2 * b * HEADS * HEAD_DIM * t * (t + 1) / 2  # causal QK^T and PV


def _block_flops(b, t):
    d = D_MODEL
    return 2 * b * t * d * (3 * d) + 2 * b * t * d * d * 2 + _attn_flops(b, t)


BHTD = lambda b, t: (b, HEADS, t, HEAD_DIM)  # noqa: E731
BTHD = lambda b, t: (b, t, HEADS * HEAD_DIM)  # noqa: E731

# name -> how to build, export and feed it. `inputs`: (name, shape(b, t),
# draw(shape, rng)); `peer`: the module PyTorch runs (eager, torch.compile);
# `export`: the module exported to ONNX (None: `onnx` builds the model);
# `flops(b, t)`: the useful floating-point work (TFLOP/s column); optional:
# `gatec_flags` (extra flags of the CUDA compile), `tol` (max scaled error vs
# PyTorch; 1e-3), `peak` (the peak the TFLOP/s are compared with),
# `same_as` (a block with the same model, weights and CPU library).
BLOCKS = {
    "bench_gated_attn": dict(
        seed=2001, inputs=[("x", lambda b, t: (b, t, D_MODEL), _normal)],
        export=lambda: em.GatedSelfAttention(D_MODEL, HEADS),
        peer=lambda: SdpaGatedSelfAttention(D_MODEL, HEADS), flops=_block_flops),
    "bench_ungated_attn": dict(
        seed=2001, inputs=[("x", lambda b, t: (b, t, D_MODEL), _normal)],
        export=lambda: UngatedSelfAttention(D_MODEL, HEADS),
        peer=lambda: UngatedSelfAttention(D_MODEL, HEADS), flops=_block_flops),
    "bench_sdpa": dict(
        seed=2002, inputs=[(n, BHTD, _normal) for n in "qkv"],
        export=Sdpa, peer=Sdpa, flops=_attn_flops),
    "bench_sdpa_gated": dict(
        seed=2002, inputs=[(n, BHTD, _normal) for n in "qkvg"],
        export=SdpaGated, peer=SdpaGated, flops=_attn_flops),
    "bench_gla": dict(
        seed=2003,
        inputs=[("query", BTHD, _unit_rows), ("key", BTHD, _unit_rows),
                ("value", BTHD, _normal),
                ("decay", lambda b, t: (b, t, HEADS), _log_decay)],
        export=None, peer=ChunkedSimpleGla,
        flops=lambda b, t: 4 * b * HEADS * t * HEAD_DIM * HEAD_DIM,  # recurrent form
        extra_peer=fla_simple_gla),
    "bench_swiglu_bf16": dict(
        seed=2004, inputs=[("x", lambda b, t: (b, t, FFN_D), _normal)],
        export=Bf16SwiGLU, peer=Bf16SwiGLU,
        flops=lambda b, t: 2 * 3 * b * t * FFN_D * FFN_H,
        # PyTorch rounds each op to bf16 at other points than gatec: 4x
        # test/scripts/low_precision.py's bf16 tolerance against it
        tol=2.0 ** -4, peak="bf16 GEMM"),
    "bench_swiglu_bf16_mma": dict(
        seed=2004, inputs=[("x", lambda b, t: (b, t, FFN_D), _normal)],
        export=Bf16SwiGLU, peer=Bf16SwiGLU,
        flops=lambda b, t: 2 * 3 * b * t * FFN_D * FFN_H,
        tol=2.0 ** -4, peak="bf16 GEMM", gatec_flags=["--gpu-mma"],
        same_as="bench_swiglu_bf16"),
}


def build(name, for_export=True):
    """The module of block `name` (the exported form, or PyTorch's peer),
    with its seed's weights (random init)."""
    spec = BLOCKS[name]
    torch.manual_seed(spec["seed"])
    make = spec["export"] if for_export else spec["peer"]
    return make().eval()


def gla_onnx(path, batch):
    """bench_gla as an ONNX LinearAttention-27 model (dynamic T)."""
    import onnx
    from onnx import TensorProto, helper
    f = TensorProto.FLOAT
    W = HEADS * HEAD_DIM
    ins = [helper.make_tensor_value_info(n, f, [batch, "T", W])
           for n in ("query", "key", "value")]
    ins.append(helper.make_tensor_value_info("decay", f, [batch, "T", HEADS]))
    node = helper.make_node("LinearAttention", ["query", "key", "value", "", "decay"],
                            ["output", "present_state"], name="gla",
                            q_num_heads=HEADS, kv_num_heads=HEADS, update_rule="gated")
    outs = [helper.make_tensor_value_info("output", f, [batch, "T", W]),
            helper.make_tensor_value_info("present_state", f,
                                          [batch, HEADS, HEAD_DIM, HEAD_DIM])]
    g = helper.make_graph([node], "bench_gla", ins, outs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)]), path)


def draw_inputs(name, b, t, seed):
    """The block's inputs at (b, t) from `seed`, as numpy arrays by name."""
    rng = np.random.default_rng(seed)
    return {n: draw(shape(b, t), rng) for n, shape, draw in BLOCKS[name]["inputs"]}
