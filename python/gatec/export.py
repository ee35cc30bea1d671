#!/usr/bin/env python3
"""Export a transformers model whose layers have linear-attention
recurrences to ONNX with a symbolic sequence length.

torch's exporters trace transformers' PyTorch reference of a recurrence
(the chunked gated delta rule, Mamba2's chunked SSD, the causal depthwise
convolution) into hundreds of Pad/Scatter/Slice/Einsum nodes, and the
dynamo exporter fixes the sequence length at the traced one where the
chunk loop is unrolled. This tool swaps those references for two custom
torch ops whose ONNX translation is the standard operator:

  - Gated DeltaNet's chunked/recurrent gated delta rule -> LinearAttention-27
    (update_rule gated_delta, scalar log-decay per head, beta per head,
    scale 1/sqrt(d_k));
  - Mamba2's SSD (chunked scan and one-token state update) ->
    LinearAttention-27 (update_rule gated: q = C, k = B expanded from its
    n_groups to the heads, v = x·dt, scalar log-decay dt·A per head with
    A = -exp(A_log) and dt = softplus(dt + dt_bias), clamped to
    time_step_limit as transformers does; scale 1.0). The D skip and the
    gated RMSNorm y·silu(z) stay ordinary ops;
  - the depthwise causal convolution (+ SiLU) in front of either ->
    CausalConvWithState-27 (its carry of k - 1 positions as past_state /
    present_state).

The rest of the model (projections, norms, MoE, attention layers) is
exported as torch's dynamo exporter writes it. The file runs in
onnxruntime (>= 1.24: both operators are in its CPU provider) and in gatec.

Architectures (model_type): qwen3_next (Gated DeltaNet + gated attention,
with or without MoE), mamba2.

Graphs:
  prefill (--graph prefill, the default): inputs input_ids and
    attention_mask [batch, seq], output logits [batch, seq, vocab]; batch
    and seq symbolic; no state in or out.
  decode (--graph decode): one new token. Inputs input_ids [batch, 1],
    attention_mask [batch, past + 1] (only with attention layers: Mamba2 has
    none, and a new token is never padding), then per layer i in order:
      recurrent layer: past_conv_<i> [batch, conv channels, k - 1] (the
        operator's carry: transformers' conv_states without its oldest of
        k columns, which never reaches an output) and
        past_recurrent_<i> [batch, v heads, d_k, d_v] (Gated DeltaNet,
        transformers' recurrent_states and the operator's layout) or
        past_ssm_<i> [batch, heads, head_dim, state_size] (Mamba2,
        transformers' layout; transposed to and from the operator's
        [batch, heads, state_size, head_dim] in the graph);
      attention layer: past_key_<i>, past_value_<i> [batch, kv heads,
        past, head_dim] (as ONNX Runtime GenAI and optimum name them).
    Outputs logits [batch, 1, vocab] and present_<same names> in the same
    layouts. batch and past symbolic.

usage:
  python -m gatec.export MODEL_DIR_OR_CONFIG_JSON -o model.onnx
      [--graph prefill|decode] [--check [--seqs 5,37] [--batch 2]
      [--atol 1e-4]] [--seed 0]

MODEL_DIR_OR_CONFIG_JSON is a directory from save_pretrained (config and
weights) or a config.json alone (random weights from --seed, as the tests
use). --check runs the exported file in onnxruntime and compares it with
the unmodified PyTorch model: the prefill at each of --seqs (max abs error
of the logits at the real tokens), or for a decode graph one step after a
prefill of each of --seqs tokens with transformers' own cache (max abs
error of the logits and of every present state); exit 1 above --atol.

Needs torch, transformers (>= 5.25: its linear-attention cache layers),
onnx >= 1.21, onnxscript and (for --check) onnxruntime; gatec itself does
not.
"""

import argparse
import contextlib
import json
import os
import sys
import warnings
from typing import Optional

import numpy as np
import torch
from transformers import DynamicCache

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
                         beta: Optional[torch.Tensor], q_num_heads: int, kv_num_heads: int,
                         scale: float, update_rule: str) -> tuple[torch.Tensor, torch.Tensor]:
        """LinearAttention-27, update_rule gated (beta None) or gated_delta,
        a scalar log-decay per head, packed [B, T, H*D] operands: the
        recurrence token by token in fp32 (the reference)."""
        b, t, _ = query.shape
        h = kv_num_heads
        dk = key.shape[-1] // h
        dv = value.shape[-1] // h
        q = query.float().reshape(b, t, q_num_heads, dk)
        k = key.float().reshape(b, t, h, dk)
        v = value.float().reshape(b, t, h, dv)
        g = decay.float().reshape(b, t, h)
        bt = beta.float().reshape(b, t, -1).expand(b, t, h) if beta is not None else None
        s = past_state.float().clone()
        group = q_num_heads // h
        out = []
        for i in range(t):
            s = s * g[:, i].exp()[:, :, None, None]
            u = v[:, i]
            if bt is not None:  # the delta rule's correction
                kv_mem = torch.einsum("bhk,bhkv->bhv", k[:, i], s)
                u = bt[:, i, :, None] * (u - kv_mem)
            s = s + k[:, i, :, :, None] * u[:, :, None, :]
            qs = q[:, i].reshape(b, h, group, dk)
            out.append(scale * torch.einsum("bhgk,bhkv->bhgv", qs, s).reshape(b, -1))
        o = torch.stack(out, 1) if out else value.new_zeros(b, 0, q_num_heads * dv).float()
        return o.to(value.dtype), s.to(past_state.dtype)

    @linear_attention.register_fake
    def _(query, key, value, past_state, decay, beta, q_num_heads, kv_num_heads, scale,
          update_rule):
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
                         kv_num_heads: int, scale: float, update_rule: str):
        return la_op(query, key, value, past_state, decay, beta, update_rule=update_rule,
                     q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, scale=scale,
                     _outputs=2)

    def causal_conv_with_state(x, weight, bias, past_state, activation: str):
        return conv_op(x, weight, bias, past_state, activation=activation, _outputs=2)

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
        g.float().reshape(b, t, hv), beta.float().reshape(b, t, hv), hv, hv, dk ** -0.5,
        "gated_delta")
    return out.reshape(b, t, hv, dv).to(value.dtype), (state if output_final_state else None)


def _causal_conv1d_forward(conv1d, hidden_states, cache, layer_idx, activation=None,
                           state_idx=0, **kwargs):
    """Drop-in for transformers' causal_conv1d_forward: the depthwise causal
    convolution from a zero carry (prefill, no cache) or from the layer's
    conv state in a StateCache (decode), whose new carry it records."""
    if cache is not None and not isinstance(cache, StateCache):
        raise NotImplementedError("gatec.export: only the graphs' own StateCache is supported")
    b, c, _ = hidden_states.shape
    k = conv1d.kernel_size[0]
    bias = conv1d.bias if conv1d.bias is not None else hidden_states.new_zeros(c)
    past = cache.get_conv_state(layer_idx) if cache is not None else None
    if past is None:
        past = hidden_states.new_zeros(b, c, k - 1)
    if activation not in (None, "silu", "swish"):
        raise NotImplementedError(f"gatec.export: conv activation {activation!r}")
    y, present = torch.ops.gatec.causal_conv_with_state(
        hidden_states, conv1d.weight, bias, past, "silu" if activation else "none")
    if cache is not None:
        cache.present_conv[layer_idx] = present
    return y


# --- Mamba2's SSD ------------------------------------------------------------


def _mamba2_scan_forward(module, hidden_states, B, C, dt, cache, **kwargs):
    """Drop-in for transformers' mamba2_scan_forward (its chunked SSD and
    its one-token selective state update): the scan as LinearAttention-27
    with update_rule gated, q = C, k = B (each group's shared by its
    heads), v = x·dt, a scalar log-decay dt·A per head (A = -exp(A_log),
    dt = softplus(dt + dt_bias)) and no scale (1.0); the D skip stays
    outside. The recurrent state is transformers' [B, H, head_dim,
    state_size], transposed to the operator's [B, H, state_size, head_dim]
    and back."""
    if cache is not None and not isinstance(cache, StateCache):
        raise NotImplementedError("gatec.export: only the graphs' own StateCache is supported")
    b, t, _ = hidden_states.shape
    h, p, n, groups = module.num_heads, module.head_dim, module.ssm_state_size, module.n_groups
    a = -torch.exp(module.A_log.float())
    dt = torch.nn.functional.softplus(dt.float() + module.dt_bias.float())
    past = cache.get_recurrent_state(module.layer_idx) if cache is not None else None
    lo, hi = module.time_step_limit
    # transformers clamps dt in the chunked form only, not in the one-token
    # update from a state (mamba2_selective_state_update).
    if not (past is not None and t == 1) and (lo, hi) != (0.0, float("inf")):
        dt = torch.clamp(dt, min=lo, max=hi)
    x = hidden_states.float().reshape(b, t, h, p)
    v = (x * dt[..., None]).reshape(b, t, h * p)

    def heads(m):  # [B, T, G*N] -> [B, T, H*N], each group's to its heads
        m = m.float().reshape(b, t, groups, 1, n).expand(b, t, groups, h // groups, n)
        return m.reshape(b, t, h * n)
    state = (past.float().transpose(-1, -2) if past is not None
             else x.new_zeros(b, h, n, p))
    out, final = torch.ops.gatec.linear_attention(
        heads(C), heads(B), v, state, (dt * a).reshape(b, t, h), None, h, h, 1.0, "gated")
    y = out.reshape(b, t, h, p) + module.D.float()[:, None] * x
    if cache is not None:
        cache.update_recurrent_state(final.transpose(-1, -2), module.layer_idx)
    return y.reshape(b, t, h * p)


# The functions of each architecture's modeling module replaced while
# exporting.
PATCHES = {
    "qwen3_next": ("transformers.models.qwen3_next.modeling_qwen3_next",
                   {"torch_chunk_gated_delta_rule": _gated_delta_rule,
                    "torch_recurrent_gated_delta_rule": _gated_delta_rule,
                    "causal_conv1d_forward": _causal_conv1d_forward}),
    "mamba2": ("transformers.models.mamba2.modeling_mamba2",
               {"mamba2_scan_forward": _mamba2_scan_forward,
                "causal_conv1d_forward": _causal_conv1d_forward}),
}
SUPPORTED = tuple(PATCHES)


@contextlib.contextmanager
def patched(model_type):
    """The model's recurrences replaced by the gatec custom ops while the
    context is open."""
    _register_ops()
    if model_type not in PATCHES:
        raise SystemExit(f"gatec.export: model_type {model_type!r} is not supported "
                         f"(supported: {', '.join(SUPPORTED)})")
    import importlib
    module_name, names = PATCHES[model_type]
    m = importlib.import_module(module_name)
    saved = {n: getattr(m, n) for n in names}
    try:
        for n, f in names.items():
            setattr(m, n, f)
        yield
    finally:
        for n, f in saved.items():
            setattr(m, n, f)


# --- decode: the states as inputs and outputs --------------------------------


def state_names(config, prefix):
    """The decode graph's state inputs (prefix past) or outputs (present),
    per layer in order: past_conv_<i> and past_recurrent_<i> (Gated
    DeltaNet) or past_ssm_<i> (Mamba2) for a recurrent layer,
    past_key_<i> and past_value_<i> for an attention layer."""
    names = []
    for i, kind in enumerate(layer_kinds(config)):
        if kind == "attention":
            names += [f"{prefix}_key_{i}", f"{prefix}_value_{i}"]
        else:
            names += [f"{prefix}_conv_{i}", f"{prefix}_{kind}_{i}"]
    return names


def layer_kinds(config):
    """Per layer: "recurrent" (Gated DeltaNet), "ssm" (Mamba2) or
    "attention"."""
    if config.model_type == "mamba2":
        return ["ssm"] * config.num_hidden_layers
    if config.model_type == "qwen3_next":
        return ["recurrent" if t == "linear_attention" else "attention"
                for t in config.layer_types[:config.num_hidden_layers]]
    raise SystemExit(f"gatec.export: model_type {config.model_type!r} is not supported "
                     f"(supported: {', '.join(SUPPORTED)})")


class StateCache(DynamicCache):
    """transformers' DynamicCache with the recurrent layers' states as plain
    tensors: read from the graph's inputs, the new ones recorded (not
    copied in place) for its outputs. Conv states are the operator's
    [B, C, k - 1] (transformers keeps k columns; the oldest never reaches
    an output)."""

    def __init__(self, config, states):
        kinds = layer_kinds(config)
        kv = [(states[2 * i], states[2 * i + 1]) if kind == "attention" else (None, None)
              for i, kind in enumerate(kinds)]
        super().__init__(ddp_cache_data=kv, config=config)
        self.kinds = kinds
        self.past_conv = {i: states[2 * i] for i, k in enumerate(kinds) if k != "attention"}
        self.past_recurrent = {i: states[2 * i + 1] for i, k in enumerate(kinds)
                               if k != "attention"}
        self.present_conv, self.present_recurrent = {}, {}

    def get_conv_state(self, layer_idx, state_idx=0):
        return self.past_conv.get(layer_idx)

    def get_recurrent_state(self, layer_idx, state_idx=0):
        return self.past_recurrent.get(layer_idx)

    def update_conv_state(self, conv_states, layer_idx, state_idx=0, **kwargs):
        raise NotImplementedError("gatec.export: conv states go through causal_conv_with_state")

    def update_recurrent_state(self, recurrent_states, layer_idx, state_idx=0, **kwargs):
        self.present_recurrent[layer_idx] = recurrent_states
        return recurrent_states

    def is_recording_past(self, layer_idx):
        return False

    def get_recurrent_states_to_keep(self, layer_idx=None):
        return 0

    def increase_count(self, layer_idx, state_idx):
        pass

    def has_previous_state(self, layer_idx=None, state_idx=None):
        return True

    def get_seq_length(self, layer_idx=0):
        """The past length: of the first attention layer's keys (a
        recurrent layer has none)."""
        for i, kind in enumerate(self.kinds):
            if kind == "attention" and (i == layer_idx or self.kinds[layer_idx] != "attention"):
                return self.layers[i].get_seq_length()
        return 0

    def presents(self):
        out = []
        for i, kind in enumerate(self.kinds):
            if kind == "attention":
                out += [self.layers[i].keys, self.layers[i].values]
            else:
                out += [self.present_conv[i], self.present_recurrent[i]]
        return out


class Decode(torch.nn.Module):
    """One decode step (one new token per row) with every layer's state as
    inputs and outputs (state_names). With attention layers the inputs are
    input_ids [batch, 1], attention_mask [batch, past + 1] and the states;
    without (Mamba2) there is no attention_mask: one new token is never
    padding, and transformers ignores the mask there."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.uses_mask = "attention" in layer_kinds(model.config)

    def forward(self, input_ids, attention_mask, states):
        cache = StateCache(self.model.config, states)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, cache=cache,
                         use_cache=True)
        return (out.logits, *cache.presents())


class DecodeNoMask(Decode):
    def forward(self, input_ids, states):
        return super().forward(input_ids, None, states)


def decode_inputs(model):
    """The decode graph's input names."""
    return (["input_ids"] + (["attention_mask"] if Decode(model).uses_mask else [])
            + state_names(model.config, "past"))


def decode_outputs(model):
    return ["logits"] + state_names(model.config, "present")


def reference_decode(model, batch, past, pad, seed):
    """One decode step of the unmodified model after its prefill of `past`
    tokens (row 0 left-padded by `pad`), with transformers' own cache: the
    decode graph's inputs by name and PyTorch's outputs by name (the conv
    states without transformers' oldest column, see StateCache)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, model.config.vocab_size, (batch, past + 1), generator=g)
    mask = torch.ones(batch, past + 1, dtype=torch.int64)
    if pad:
        mask[0, :pad] = 0
        ids[0, :pad] = 0
    kinds = layer_kinds(model.config)

    def states(cache):
        out = []
        for i, kind in enumerate(kinds):
            layer = cache.layers[i]
            if kind == "attention":
                out += [layer.keys.clone(), layer.values.clone()]
            else:
                out += [layer.conv_states[0][..., 1:].clone(), layer.recurrent_states[0].clone()]
        return out
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        model(input_ids=ids[:, :past], attention_mask=mask[:, :past], cache=cache,
              use_cache=True)
        before = states(cache)
        logits = model(input_ids=ids[:, past:], attention_mask=mask, cache=cache,
                       use_cache=True).logits
        after = states(cache)
    feeds = {"input_ids": ids[:, past:].numpy()}
    if "attention" in kinds:
        feeds["attention_mask"] = mask.numpy()
    feeds.update({n: t.float().numpy() for n, t in zip(state_names(model.config, "past"),
                                                      before)})
    expected = {"logits": logits.float().numpy()}
    expected.update({n: t.float().numpy() for n, t in zip(state_names(model.config, "present"),
                                                         after)})
    return feeds, expected


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


def _finish(prog, path):
    """The exported program's proto with the staged operators moved to the
    default domain at opset 27, checked and saved."""
    import onnx
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


def export(model, path):
    """The prefill graph with symbolic batch and seq, opset 27."""
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
    return _finish(prog, path)


def export_decode(model, path):
    """The decode graph (one new token, Decode): batch symbolic, and the
    past length of the attention layers' keys and values (and of
    attention_mask, past + 1); the recurrent states have fixed sizes;
    opset 27."""
    feeds, _ = reference_decode(model, 2, 4, 0, 0)  # example inputs: shapes only
    names = decode_inputs(model)
    wrapped = Decode(model) if "attention_mask" in names else DecodeNoMask(model)
    states = tuple(torch.from_numpy(feeds[n]) for n in names if n.startswith("past_"))
    args = (torch.from_numpy(feeds["input_ids"]),)
    D = torch.export.Dim.DYNAMIC
    shapes = ({0: D},)
    if "attention_mask" in names:
        args += (torch.from_numpy(feeds["attention_mask"]),)
        shapes += ({0: D, 1: D},)
    # seq of the new token static (1); batch dynamic; past length dynamic
    # (keys and values only).
    shapes += (tuple({0: D, 2: D} if "_key_" in n or "_value_" in n else {0: D}
                     for n in names if n.startswith("past_")),)
    args += (states,)
    with patched(model.config.model_type), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = torch.onnx.export(wrapped, args, dynamo=True, opset_version=TORCH_OPSET,
                                 input_names=names, output_names=decode_outputs(model),
                                 dynamic_shapes=shapes,
                                 custom_translation_table=_translations(),
                                 external_data=False, verbose=False)
    return _finish(prog, path)


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


def _lengths(text, flag):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise SystemExit(f"gatec.export: {flag} wants comma-separated lengths >= 1, "
                         f"got {text!r}")
    return values


def check_prefill(model, path, seqs, batch):
    """onnxruntime on the prefill file against the unmodified model at each
    length: the max abs error of the logits at the real tokens."""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst = 0.0
    for i, t in enumerate(seqs):
        pad = min(3, t - 1) if batch > 1 else 0
        ids, mask, ref = reference_case(model, batch, t, pad, 100 + i)
        (out,) = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        err = float(np.abs(out - ref)[mask.astype(bool)].max())
        worst = max(worst, err)
        print(f"seq {t}: onnxruntime vs PyTorch max abs error {err:.3g} (real tokens)")
    return worst


def check_decode(model, path, pasts, batch):
    """onnxruntime on the decode file against the unmodified model's own
    decode step after a prefill of each past length: the max abs error of
    every output (logits and present states)."""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    worst = 0.0
    for i, p in enumerate(pasts):
        pad = min(3, p - 1) if batch > 1 else 0
        feeds, expected = reference_decode(model, batch, p, pad, 200 + i)
        outs = sess.run(None, {i.name: feeds[i.name] for i in sess.get_inputs()})
        errs = {o.name: float(np.abs(r - expected[o.name]).max())
                for o, r in zip(sess.get_outputs(), outs)}
        worst = max(worst, *errs.values())
        print(f"past {p}: onnxruntime vs PyTorch max abs error "
              + ", ".join(f"{n} {e:.3g}" for n, e in errs.items()))
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m gatec.export",
        description=" ".join(__doc__.split("\n\n")[0].split()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__[__doc__.index("Graphs:"):__doc__.index("usage:")])
    ap.add_argument("source", help="save_pretrained directory (config and weights) or a "
                    "config.json alone (random weights from --seed)")
    ap.add_argument("-o", "--output", required=True, help="the ONNX file to write")
    ap.add_argument("--graph", choices=("prefill", "decode"), default="prefill",
                    help="prefill: all tokens, no state (default); decode: one new token "
                    "with every layer's state as inputs and outputs")
    ap.add_argument("--seed", type=int, default=0, help="random weights' seed (config only)")
    ap.add_argument("--check", action="store_true",
                    help="run the file in onnxruntime and compare it with the unmodified "
                    "PyTorch model (exit 1 above --atol)")
    ap.add_argument("--seqs", default="5,37",
                    help="--check: prefill sequence lengths, or for --graph decode the "
                    "past lengths before the new token (default 5,37)")
    ap.add_argument("--batch", type=int, default=2,
                    help="--check: batch size; with 2 or more, row 0 is left-padded by "
                    "up to 3 tokens (default 2)")
    ap.add_argument("--atol", type=float, default=1e-4,
                    help="--check: the max abs error allowed (default 1e-4)")
    args = ap.parse_args(argv)
    seqs = _lengths(args.seqs, "--seqs")
    if args.batch < 1:
        raise SystemExit(f"gatec.export: --batch must be >= 1, got {args.batch}")
    if not os.path.exists(args.source):
        raise SystemExit(f"gatec.export: {args.source}: no such file or directory")
    model = load_model(args.source, args.seed)
    layer_kinds(model.config)  # an unsupported architecture's error before exporting
    proto = (export_decode if args.graph == "decode" else export)(model, args.output)
    ops = [n.op_type for n in proto.graph.node]
    print(f"{args.output}: {args.graph}, {len(ops)} nodes, opset {OPSET}; "
          f"LinearAttention {ops.count('LinearAttention')}, "
          f"CausalConvWithState {ops.count('CausalConvWithState')}; inputs "
          + ", ".join(i.name for i in proto.graph.input))
    if not args.check:
        return 0
    check = check_decode if args.graph == "decode" else check_prefill
    return 0 if check(model, args.output, seqs, args.batch) <= args.atol else 1


if __name__ == "__main__":
    sys.exit(main())
