"""The PyTorch modules of the GPU benchmark (test/gpu/run_gpu.py), shared by
prepare.py (which exports them to ONNX for gatec) and run_gpu.py (which runs
them eagerly and with torch.compile as the peers).

  bench_gated_attn    G1 elementwise sigmoid gate on the attention output
                      (seed 004; test/models/export_models.GatedSelfAttention)
  bench_ungated_attn  the same block with the gate removed: the gate's
                      overhead is gated time / ungated time

d_model 256, 4 heads of 64; the export has dynamic batch and sequence.
Weights are saved by prepare.py (state_dict as .npz) and loaded by
run_gpu.py, so both sides use the same numbers whatever torch's version.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "models"))
import export_models as em  # noqa: E402

D_MODEL, HEADS = 256, 4


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


SEEDS = {"bench_gated_attn": 2001, "bench_ungated_attn": 2001}


def build(name, for_export=True):
    """The module `name` with its seed's weights (random init)."""
    torch.manual_seed(SEEDS[name])
    if name == "bench_gated_attn":
        cls = em.GatedSelfAttention if for_export else SdpaGatedSelfAttention
    else:
        cls = UngatedSelfAttention
    return cls(D_MODEL, HEADS).eval()
