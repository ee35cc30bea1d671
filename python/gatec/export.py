#!/usr/bin/env python3
"""Export a transformers model whose layers have linear-attention
recurrences to ONNX with a symbolic sequence length.

torch's exporters trace transformers' PyTorch reference of a recurrence
(the chunked gated delta rule, the causal depthwise convolution) into
hundreds of Pad/Scatter/Slice nodes, and the dynamo exporter fixes the
sequence length at the traced one because the chunk loop is unrolled. This
tool swaps those references for two custom torch ops whose ONNX translation
is the standard operator:

  - Gated DeltaNet's chunked/recurrent gated delta rule -> LinearAttention-27
    (update_rule gated_delta, scalar log-decay per head, beta per head, the
    recurrent state as past_state/present_state);
  - the depthwise causal convolution (+ SiLU) in front of it ->
    CausalConvWithState-27 (its carry of k - 1 positions as past_state /
    present_state).

The rest of the model (projections, norms, MoE, attention layers) is
exported as torch's dynamo exporter writes it. The file runs in
onnxruntime (>= 1.24: both operators are in its CPU provider) and in gatec.

Architectures: qwen3_next (Gated DeltaNet + gated attention, with or
without MoE). The exported graph is the prefill: inputs input_ids and
attention_mask [batch, seq], output logits [batch, seq, vocab], with batch
and seq symbolic.

usage:
  python -m gatec.export MODEL_DIR_OR_CONFIG_JSON -o model.onnx [--check]
      [--seqs 5,37] [--seed 0]

MODEL_DIR_OR_CONFIG_JSON is a directory from save_pretrained (config and
weights) or a config.json alone (random weights from --seed, as the tests
use). --check runs the exported file in onnxruntime at the given sequence
lengths and compares it with the unmodified PyTorch model (max abs error
of the logits printed; exit 1 above --atol).

Needs torch, transformers, onnx >= 1.21, onnxscript and (for --check)
onnxruntime; gatec itself does not.
"""

import argparse
import contextlib
import json
import os
import sys
import warnings

import numpy as np
import torch

# LinearAttention and CausalConvWithState are ONNX 27 operators. torch's
# exporter writes the rest at opset 18 (its most used translations; at 23
# it writes RotaryEmbedding-23 with caches onnxruntime 1.24 refuses, and at
# 27 onnx's version converter has no adapters past Attention-23), and the
# file's default-domain opset is then raised to 27: the operators torch
# writes keep their meaning from 18 to 27 (later versions add types,
# optional inputs and attributes with defaults that keep the old
# behaviour), which onnx.checker's full check and the outputs against
# PyTorch in onnxruntime and gatec confirm.
OPSET = 27
TORCH_OPSET = 18
STAGING_DOMAIN = "gatec.export"


def _register_ops():
    """The custom torch ops (namespace gatec) with their eager reference and
    fake (shape) implementations; idempotent."""
    if hasattr(torch.ops.gatec, "linear_attention"):
        return

    @torch.library.custom_op("gatec::linear_attention", mutates_args=())
    def linear_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         past_state: torch.Tensor, decay: torch.Tensor,
                         beta: torch.Tensor, q_num_heads: int, kv_num_heads: int,
                         scale: float) -> tuple[torch.Tensor, torch.Tensor]:
        """LinearAttention-27, update_rule gated_delta, packed [B, T, H*D]
        operands: the recurrence token by token in fp32 (the reference)."""
        b, t, _ = query.shape
        h = kv_num_heads
        dk = key.shape[-1] // h
        dv = value.shape[-1] // h
        q = query.float().reshape(b, t, q_num_heads, dk)
        k = key.float().reshape(b, t, h, dk)
        v = value.float().reshape(b, t, h, dv)
        g = decay.float().reshape(b, t, h)
        bt = beta.float().reshape(b, t, -1).expand(b, t, h)
        s = past_state.float().clone()
        group = q_num_heads // h
        out = []
        for i in range(t):
            s = s * g[:, i].exp()[:, :, None, None]
            kv_mem = torch.einsum("bhk,bhkv->bhv", k[:, i], s)
            u = bt[:, i, :, None] * (v[:, i] - kv_mem)
            s = s + k[:, i, :, :, None] * u[:, :, None, :]
            qs = q[:, i].reshape(b, h, group, dk)
            out.append(scale * torch.einsum("bhgk,bhkv->bhgv", qs, s).reshape(b, -1))
        o = torch.stack(out, 1) if out else value.new_zeros(b, 0, q_num_heads * dv).float()
        return o.to(value.dtype), s.to(past_state.dtype)

    @linear_attention.register_fake
    def _(query, key, value, past_state, decay, beta, q_num_heads, kv_num_heads, scale):
        b, t, _ = query.shape
        dv = value.shape[-1] // kv_num_heads
        return (value.new_empty(b, t, q_num_heads * dv), past_state.new_empty(past_state.shape))

    @torch.library.custom_op("gatec::causal_conv_with_state", mutates_args=())
    def causal_conv_with_state(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                               past_state: torch.Tensor,
                               activation: str) -> tuple[torch.Tensor, torch.Tensor]:
        """CausalConvWithState-27: depthwise causal conv over [B, C, T] with
        the last k - 1 inputs of the previous call in front."""
        import torch.nn.functional as F
        k = weight.shape[-1]
        full = torch.cat([past_state.to(x.dtype), x], dim=-1)
        y = F.conv1d(full, weight.to(x.dtype), bias, groups=x.shape[1])
        if activation == "silu":
            y = F.silu(y)
        return y, full[:, :, full.shape[-1] - (k - 1):].clone()

    @causal_conv_with_state.register_fake
    def _(x, weight, bias, past_state, activation):
        return x.new_empty(x.shape), past_state.new_empty(past_state.shape)


def _staged_schema(name):
    """The ONNX 27 schema of `name`, copied into the staging domain."""
    import onnx
    from onnx.defs import OpSchema
    src = onnx.defs.get_schema(name, OPSET, "")

    def params(ps):
        return [OpSchema.FormalParameter(p.name, p.type_str, p.description,
                                         param_option=p.option) for p in ps]
    return OpSchema(
        name, STAGING_DOMAIN, 1, inputs=params(src.inputs), outputs=params(src.outputs),
        type_constraints=[(c.type_param_str, list(c.allowed_type_strs), c.description)
                          for c in src.type_constraints],
        attributes=[OpSchema.Attribute(a.name, a.type, a.description, required=False)
                    for a in src.attributes.values()])


def _translations():
    """torch op -> onnxscript function emitting the ONNX 27 operator."""
    from onnxscript.values import Op, Opset
    # Written in a domain of their own (the exporter converts every node of
    # the default domain to its opset version) and moved to the default
    # domain after export.
    staging = Opset(STAGING_DOMAIN, 1)
    la_op, conv_op = (Op(staging, n, _staged_schema(n))
                      for n in ("LinearAttention", "CausalConvWithState"))

    def linear_attention(query, key, value, past_state, decay, beta, q_num_heads: int,
                         kv_num_heads: int, scale: float):
        return la_op(query, key, value, past_state, decay, beta,
                                  update_rule="gated_delta", q_num_heads=q_num_heads,
                                  kv_num_heads=kv_num_heads, scale=scale, _outputs=2)

    def causal_conv_with_state(x, weight, bias, past_state, activation: str):
        return conv_op(x, weight, bias, past_state, activation=activation,
                                      _outputs=2)

    return {torch.ops.gatec.linear_attention.default: linear_attention,
            torch.ops.gatec.causal_conv_with_state.default: causal_conv_with_state}


# --- Qwen3-Next's Gated DeltaNet -------------------------------------------


def _gated_delta_rule(query, key, value, g, beta, chunk_size=64, initial_state=None,
                      output_final_state=False, use_qk_l2norm_in_kernel=False, **kwargs):
    """Drop-in for transformers' torch_chunk_gated_delta_rule and
    torch_recurrent_gated_delta_rule: [B, T, H, D] operands, returns the
    output [B, T, Hv, Dv] and the final state (or None)."""
    b, t, hk, dk = key.shape
    hv, dv = value.shape[-2:]
    if hk != hv:  # each key head serves hv/hk consecutive value heads
        query = query.repeat_interleave(hv // hk, dim=2)
        key = key.repeat_interleave(hv // hk, dim=2)
    query, key = query.float(), key.float()
    if use_qk_l2norm_in_kernel:
        query = query * torch.rsqrt((query * query).sum(-1, keepdim=True) + 1e-6)
        key = key * torch.rsqrt((key * key).sum(-1, keepdim=True) + 1e-6)
    if initial_state is None:
        initial_state = value.new_zeros(b, hv, dk, dv, dtype=torch.float32)
    out, state = torch.ops.gatec.linear_attention(
        query.reshape(b, t, hv * dk), key.reshape(b, t, hv * dk),
        value.float().reshape(b, t, hv * dv), initial_state.float(),
        g.float().reshape(b, t, hv), beta.float().reshape(b, t, hv), hv, hv, dk ** -0.5)
    return out.reshape(b, t, hv, dv).to(value.dtype), (state if output_final_state else None)


def _causal_conv1d_forward(conv1d, hidden_states, cache, layer_idx, activation=None,
                           state_idx=0, **kwargs):
    """Drop-in for transformers' causal_conv1d_forward without a cache: the
    prefill's depthwise causal convolution from a zero carry."""
    if cache is not None:
        raise NotImplementedError("gatec.export: the prefill graph has no cache")
    b, c, _ = hidden_states.shape
    k = conv1d.kernel_size[0]
    bias = conv1d.bias if conv1d.bias is not None else hidden_states.new_zeros(c)
    past = hidden_states.new_zeros(b, c, k - 1)
    if activation not in (None, "silu", "swish"):
        raise NotImplementedError(f"gatec.export: conv activation {activation!r}")
    y, _ = torch.ops.gatec.causal_conv_with_state(
        hidden_states, conv1d.weight, bias, past, "silu" if activation else "none")
    return y


@contextlib.contextmanager
def patched(model_type):
    """The model's recurrences replaced by the gatec custom ops while the
    context is open."""
    _register_ops()
    if model_type != "qwen3_next":
        raise SystemExit(f"gatec.export: model_type {model_type!r} is not supported "
                         "(supported: qwen3_next)")
    from transformers.models.qwen3_next import modeling_qwen3_next as m
    names = {"torch_chunk_gated_delta_rule": _gated_delta_rule,
             "torch_recurrent_gated_delta_rule": _gated_delta_rule,
             "causal_conv1d_forward": _causal_conv1d_forward}
    saved = {n: getattr(m, n) for n in names}
    try:
        for n, f in names.items():
            setattr(m, n, f)
        yield
    finally:
        for n, f in saved.items():
            setattr(m, n, f)


# --- export ------------------------------------------------------------------


def load_model(source, seed=0):
    """A transformers causal LM from a save_pretrained directory or a
    config.json (random weights from `seed`), in eval mode."""
    import transformers
    if os.path.isdir(source) and any(f.endswith((".safetensors", ".bin"))
                                     for f in os.listdir(source)):
        model = transformers.AutoModelForCausalLM.from_pretrained(source)
    else:
        path = os.path.join(source, "config.json") if os.path.isdir(source) else source
        cfg = transformers.AutoConfig.from_pretrained(path)
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    # MoE experts: batched_mm exports (one GatherND of the experts' weights,
    # raised by gatec to gated.expert_glu); grouped_mm, the default, does
    # not export.
    if getattr(model.config, "num_experts", 0) and hasattr(model, "set_experts_implementation"):
        model.set_experts_implementation("batched_mm")
    return model.eval()


def strip_stack_traces(proto):
    """The dynamo exporter's per-node stack traces hold absolute paths."""
    for g in [proto.graph] + list(proto.functions):
        for n in g.node:
            keep = [p for p in n.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
            del n.metadata_props[:]
            n.metadata_props.extend(keep)


class Prefill(torch.nn.Module):
    """The prefill graph's module: logits of all tokens, no cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False).logits


def export(model, path):
    """The prefill graph with symbolic batch and seq, opset 27."""
    import onnx
    ids = torch.ones(2, 9, dtype=torch.int64)
    mask = torch.ones(2, 9, dtype=torch.int64)
    B, S = torch.export.Dim("batch"), torch.export.Dim("seq")
    with patched(model.config.model_type), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = torch.onnx.export(Prefill(model), (ids, mask), dynamo=True,
                                 opset_version=TORCH_OPSET,
                                 input_names=["input_ids", "attention_mask"],
                                 output_names=["logits"],
                                 dynamic_shapes={"input_ids": {0: B, 1: S},
                                                 "attention_mask": {0: B, 1: S}},
                                 custom_translation_table=_translations(),
                                 external_data=False, verbose=False)
    proto = prog.model_proto
    strip_stack_traces(proto)
    for g in [proto.graph] + list(proto.functions):
        for n in g.node:
            if n.domain == STAGING_DOMAIN:
                n.domain = ""
    keep = [o for o in proto.opset_import if o.domain != STAGING_DOMAIN]
    del proto.opset_import[:]
    proto.opset_import.extend(keep)
    for o in proto.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = OPSET
    onnx.checker.check_model(proto, full_check=True)
    onnx.save_model(proto, path, save_as_external_data=False)
    return proto


def reference_case(model, batch, seq, pad, seed):
    """Inputs (row 0 left-padded by `pad`) and the unmodified model's
    logits."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, model.config.vocab_size, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if pad:
        mask[0, :pad] = 0
        ids[0, :pad] = 0
    with torch.no_grad():
        logits = Prefill(model)(ids, mask)
    return ids.numpy(), mask.numpy(), logits.float().numpy()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gatec.export", description=__doc__.split("\n")[0])
    ap.add_argument("source", help="save_pretrained directory or config.json")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--seed", type=int, default=0, help="random weights' seed (config only)")
    ap.add_argument("--check", action="store_true",
                    help="compare onnxruntime on the file with PyTorch")
    ap.add_argument("--seqs", default="5,37", help="sequence lengths for --check")
    ap.add_argument("--atol", type=float, default=1e-4)
    args = ap.parse_args(argv)
    model = load_model(args.source, args.seed)
    proto = export(model, args.output)
    print(f"{args.output}: {len(proto.graph.node)} nodes, opset {OPSET}; "
          f"LinearAttention {sum(n.op_type == 'LinearAttention' for n in proto.graph.node)}, "
          f"CausalConvWithState {sum(n.op_type == 'CausalConvWithState' for n in proto.graph.node)}")
    if not args.check:
        return 0
    import onnxruntime as ort
    sess = ort.InferenceSession(args.output, providers=["CPUExecutionProvider"])
    worst = 0.0
    for i, t in enumerate(int(s) for s in args.seqs.split(",")):
        ids, mask, ref = reference_case(model, 2, t, min(3, t - 1), 100 + i)
        (out,) = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        real = mask.astype(bool)
        err = float(np.abs(out - ref)[real].max())
        worst = max(worst, err)
        print(f"seq {t}: onnxruntime vs PyTorch max abs error {err:.3g} (real tokens)")
    return 0 if worst <= args.atol else 1


if __name__ == "__main__":
    sys.exit(main())
