#!/usr/bin/env python3
"""Exports tiny Hugging Face transformers decoders to ONNX as users do, with
both of torch's exporters, and records PyTorch's outputs for gatec's tests
(test/Models/hf-exports.test).

Every model is built from its transformers config class with a tiny size and
random weights (torch.manual_seed(0); no model hub is reached), in eval mode,
with the `sdpa` attention implementation (transformers' default), and exported
as a prefill graph: inputs `input_ids` and `attention_mask` [batch, seq]
(int64, dynamic), output `logits` [batch, seq, vocab], no KV cache.

  <arch>_dynamo.onnx  torch.onnx.export(..., dynamo=True), opset 18
  <arch>_ts.onnx      torch.onnx.export(..., dynamo=False), opset 17
  <arch>_onnx27.onnx  python -m gatec.export (the architectures it
                      supports, ONNX27: Qwen3-Next's hybrids and Mamba2,
                      their recurrences as LinearAttention-27 and
                      CausalConvWithState-27, seq symbolic), opset 27

and for each case (b1_t5: batch 1, seq 5; b2_t9: batch 2, seq 9, row 0
left-padded by 3 tokens; for the onnx27 architectures also b1_t1 and
b2_t80, longer than a linear-attention chunk) <arch>_<case>_ids.npy, <arch>_<case>_mask.npy and
<arch>_<case>_logits.npy (PyTorch's logits). A failed export is recorded in
exports.json with its error and the script goes on.

With --graphs=decode: one decode step per architecture and exporter,
<arch>_<exporter>_decode.onnx, with the cases <arch>_decode_b1_p5.npz and
<arch>_decode_b2_p9.npz (a past of 5 or 9 tokens, row 0 of batch 2
left-padded by 3; the inputs by name, PyTorch's outputs as
expected.<name>). The transformers decoders' past is their KV cache
(past_key_<i>/past_value_<i>); the hybrid architectures have decode graphs
from the onnx27 exporter only (python -m gatec.export --graph decode), with
each recurrent layer's conv state and recurrent (Gated DeltaNet) or ssm
(Mamba2) state as past_conv_<i> and past_recurrent_<i> / past_ssm_<i> and
the present_* outputs (layouts in python/gatec/export.py's docstring), the
expected values from transformers' own cache after its decode step.

Regenerate (needs torch and transformers, not needed by the tests):
  python3 -m venv /tmp/exportenv
  /tmp/exportenv/bin/pip install torch transformers "onnx==1.23.*" onnxscript onnxruntime
  /tmp/exportenv/bin/python test/models/hf/export_hf.py [--only llama,qwen3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from gatec import export as gatec_export  # noqa: E402
from gatec.export import Prefill, strip_stack_traces  # noqa: E402
VOCAB = 96
# Shared tiny sizes: d = 32, 4 query heads of 8, 2 KV heads (GQA), 2 layers.
BASE = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=8, max_position_embeddings=128, tie_word_embeddings=False)


def configs():
    """arch -> (transformers config class name, kwargs)."""
    return {
        "llama": ("LlamaConfig", {}),
        "mistral": ("MistralConfig", dict(sliding_window=4)),
        "qwen3": ("Qwen3Config", {}),
        "qwen3_moe": ("Qwen3MoeConfig", dict(num_experts=4, num_experts_per_tok=2,
                                             moe_intermediate_size=32,
                                             decoder_sparse_step=1, mlp_only_layers=[])),
        # Only the gated-attention layers; the hybrid model has its own issue.
        "qwen3_next": ("Qwen3NextConfig", dict(layer_types=["full_attention"] * 2,
                                               num_experts=4, num_experts_per_tok=2,
                                               moe_intermediate_size=32,
                                               shared_expert_intermediate_size=32,
                                               decoder_sparse_step=1, mlp_only_layers=[],
                                               partial_rotary_factor=0.5)),
        "gemma2": ("Gemma2Config", dict(sliding_window=4, query_pre_attn_scalar=8,
                                        layer_types=["sliding_attention",
                                                     "full_attention"])),
        "gemma3": ("Gemma3TextConfig", dict(sliding_window=4, query_pre_attn_scalar=8,
                                            layer_types=["sliding_attention",
                                                         "full_attention"])),
        "phi3": ("Phi3Config", dict(pad_token_id=0)),
        "olmo2": ("Olmo2Config", {}),
        "gpt_oss": ("GptOssConfig", dict(num_local_experts=4, num_experts_per_tok=2,
                                         sliding_window=4,
                                         layer_types=["sliding_attention",
                                                      "full_attention"])),
    } | HYBRID_CONFIGS


# Hybrid and recurrent architectures (issue 17): a recurrent layer, then an
# attention layer where the model has them. Their recurrences are exported
# in transformers' torch reference forms (no flash-linear-attention,
# mamba_ssm or causal_conv1d kernels here): Qwen3-Next's chunked gated delta
# rule (chunk 64, the triangular solve unrolled into scatter steps: the
# dynamo exporter fixes the sequence length, the TorchScript exporter
# refuses linalg_solve_triangular), Mamba2's chunked SSD (chunk 8 here),
# RecurrentGemma's RG-LRU scan (unrolled over the traced tokens) and LFM2's
# gated short convolution.
GDN = dict(linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8,
           linear_value_head_dim=8, linear_conv_kernel_dim=4, partial_rotary_factor=0.5,
           layer_types=["linear_attention", "full_attention"])
MAMBA = dict(mamba_n_heads=8, mamba_d_head=8, mamba_d_state=16, mamba_n_groups=1,
             mamba_expand=2, mamba_d_conv=4, mamba_chunk_size=8)
HYBRID_CONFIGS = {
    "qwen3_next_hybrid": ("Qwen3NextConfig", dict(GDN, num_experts=4, num_experts_per_tok=2,
                                                  moe_intermediate_size=32,
                                                  shared_expert_intermediate_size=32,
                                                  decoder_sparse_step=1, mlp_only_layers=[])),
    "qwen3_next_hybrid_dense": ("Qwen3NextConfig", dict(GDN, mlp_only_layers=[0, 1])),
    "mamba2": ("Mamba2Config", dict(num_heads=8, head_dim=8, state_size=16, n_groups=1,
                                    expand=2, conv_kernel=4, chunk_size=8)),
    "bamba": ("BambaConfig", dict(MAMBA, attn_layer_indices=[1])),
    "falcon_h1": ("FalconH1Config", dict(MAMBA, mamba_d_ssm=64)),
    "recurrent_gemma": ("RecurrentGemmaConfig", dict(block_types=["recurrent", "attention"],
                                                     lru_width=32, attention_window_size=8,
                                                     conv1d_width=4, logits_soft_cap=30.0)),
    "lfm2": ("Lfm2Config", dict(layer_types=["conv", "full_attention"], conv_L_cache=3,
                                block_ff_dim=64, block_auto_adjust_ff_dim=False)),
}
HYBRID = set(HYBRID_CONFIGS)


CASES = {"b1_t5": (1, 5, 0), "b2_t9": (2, 9, 3)}
# One token, and longer than one chunk of the linear-attention layers (64
# for Gated DeltaNet, chunk_size 8 for the tiny Mamba2), for the exports
# with a symbolic sequence length of their recurrences (onnx27).
LONG_CASES = {"b1_t1": (1, 1, 0), "b2_t80": (2, 80, 3)}
# Exporters per architecture beyond dynamo and ts: onnx27 is gatec's own
# export path (python -m gatec.export: LinearAttention-27 and
# CausalConvWithState-27 in place of transformers' torch references).
ONNX27 = {"qwen3_next_hybrid", "qwen3_next_hybrid_dense", "mamba2"}
# Decode cases: (batch, past length, left padding of row 0); one new token.
DECODE_CASES = {"b1_p5": (1, 5, 0), "b2_p9": (2, 9, 3)}


MOE = {"qwen3_moe", "qwen3_next", "gpt_oss", "qwen3_next_hybrid"}
# The experts implementations tried per exporter, first that exports wins.
EXPERTS = {"dynamo": ["batched_mm", "eager", "grouped_mm"],
           "ts": ["eager", "batched_mm", "grouped_mm"],
           "onnx27": ["batched_mm", "eager", "grouped_mm"]}


def build(arch, experts=None):
    """The model and the attention implementation it got: sdpa (transformers'
    default) where the architecture supports it, else eager (Gemma2's
    softcapping)."""
    import transformers
    cls_name, kw = configs()[arch]
    extra = {"experts_implementation": experts} if experts else {}
    for attn in ("sdpa", "eager"):
        cfg = getattr(transformers, cls_name)(**{**BASE, **kw, **extra})
        cfg._attn_implementation = attn
        torch.manual_seed(0)
        try:
            model = transformers.AutoModelForCausalLM.from_config(cfg)
        except ValueError:
            if attn == "eager":
                raise
            continue
        break
    with torch.no_grad():  # norms' weights off their init so they matter
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval(), attn


class Decode(torch.nn.Module):
    """One decode step with the KV cache as inputs and outputs, flattened
    (past_key_0, past_value_0, past_key_1, ...) as ONNX Runtime GenAI and
    optimum name them: the cache is rebuilt from the inputs as a
    DynamicCache with the model's config (sliding-window layers get
    transformers' sliding cache layers) and returned after the step."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.layers = model.config.num_hidden_layers

    def forward(self, input_ids, attention_mask, past):
        from transformers import DynamicCache
        cache = DynamicCache(
            ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(self.layers)],
            config=self.model.config)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         cache=cache, use_cache=True)
        present = []
        for layer in cache.layers:
            present += [layer.keys, layer.values]
        return (out.logits, *present)


def kv_names(model, prefix):
    return [f"{prefix}_{kv}_{i}" for i in range(model.config.num_hidden_layers)
            for kv in ("key", "value")]


def case_inputs(b, t, pad):
    g = torch.Generator().manual_seed(b * 100 + t)
    ids = torch.randint(1, VOCAB, (b, t), generator=g)
    mask = torch.ones(b, t, dtype=torch.int64)
    if pad:
        mask[0, :pad] = 0
        ids[0, :pad] = 0
    return ids, mask


def export(arch, exporter, model, path):
    import onnx
    if exporter == "onnx27":  # python/gatec/export.py: the recurrences as ONNX 27 ops
        gatec_export.export(model, path)
        return
    ids, mask = case_inputs(2, 9, 3)
    wrapped = Prefill(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "ts":
            dyn = {"input_ids": {0: "batch", 1: "seq"},
                   "attention_mask": {0: "batch", 1: "seq"},
                   "logits": {0: "batch", 1: "seq"}}
            torch.onnx.export(wrapped, (ids, mask), path, dynamo=False, opset_version=17,
                              input_names=["input_ids", "attention_mask"],
                              output_names=["logits"], dynamic_axes=dyn,
                              do_constant_folding=True)
        else:
            B, S = torch.export.Dim("batch"), torch.export.Dim("seq")
            prog = torch.onnx.export(wrapped, (ids, mask), dynamo=True, opset_version=18,
                                     input_names=["input_ids", "attention_mask"],
                                     output_names=["logits"],
                                     dynamic_shapes={"input_ids": {0: B, 1: S},
                                                     "attention_mask": {0: B, 1: S}},
                                     external_data=False, verbose=False)
            proto = prog.model_proto
            strip_stack_traces(proto)
            onnx.save_model(proto, path, save_as_external_data=False)


def decode_case(model, b, p, pad):
    """The inputs of one decode step after a prefill of p tokens (the past
    is the model's own cache of them) and PyTorch's outputs, by name."""
    ids, mask = case_inputs(b, p + 1, pad)
    with torch.no_grad():
        pre = model(input_ids=ids[:, :p], attention_mask=mask[:, :p], use_cache=True)
        past = []
        for layer in pre.past_key_values.layers:
            past += [layer.keys.clone(), layer.values.clone()]
        outs = Decode(model)(ids[:, p:], mask, tuple(past))
    feeds = {"input_ids": ids[:, p:].numpy(), "attention_mask": mask.numpy()}
    feeds.update({n: t.float().numpy() for n, t in zip(kv_names(model, "past"), past)})
    names = ["logits"] + kv_names(model, "present")
    expected = {n: t.float().numpy() for n, t in zip(names, outs)}
    return feeds, expected


def export_decode(exporter, model, path, feeds):
    import onnx
    args = (torch.from_numpy(feeds["input_ids"]), torch.from_numpy(feeds["attention_mask"]),
            tuple(torch.from_numpy(feeds[n]) for n in kv_names(model, "past")))
    inputs = ["input_ids", "attention_mask"] + kv_names(model, "past")
    outputs = ["logits"] + kv_names(model, "present")
    wrapped = Decode(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "ts":
            dyn = {"input_ids": {0: "batch"}, "attention_mask": {0: "batch", 1: "total"},
                   "logits": {0: "batch"}}
            # Per layer: a sliding-window layer's cache is cropped to its
            # window, so the layers' past lengths differ.
            dyn.update({n: {0: "batch", 2: "past_" + n.rsplit("_", 1)[1]}
                        for n in inputs[2:]})
            dyn.update({n: {0: "batch", 2: "present_" + n.rsplit("_", 1)[1]}
                        for n in outputs[1:]})
            torch.onnx.export(wrapped, args, path, dynamo=False, opset_version=17,
                              input_names=inputs, output_names=outputs,
                              dynamic_axes=dyn, do_constant_folding=True)
        else:
            # One new token (seq static 1: SDPA's is_causal cannot be a
            # symbolic bool); batch and past length dynamic.
            D = torch.export.Dim.DYNAMIC
            shapes = ({0: D}, {0: D, 1: D}, tuple({0: D, 2: D} for _ in args[2]))
            prog = torch.onnx.export(wrapped, args, dynamo=True, opset_version=18,
                                     input_names=inputs, output_names=outputs,
                                     dynamic_shapes=shapes, external_data=False,
                                     verbose=False)
            proto = prog.model_proto
            strip_stack_traces(proto)
            onnx.save_model(proto, path, save_as_external_data=False)


def check_ort_decode(path, arch):
    """onnxruntime against PyTorch's decode outputs, per case: max abs error
    of the logits and of the present keys/values."""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    errs = {}
    for case in DECODE_CASES:
        data = np.load(os.path.join(HERE, f"{arch}_decode_{case}.npz"))
        feeds = {i.name: data[i.name] for i in sess.get_inputs()}
        try:
            outs = sess.run(None, feeds)
        except Exception as e:  # this case only (a traced MoE loop's sizes)
            errs[case] = {"error": str(e).splitlines()[0][:300]}
            continue
        errs[case] = {o.name: float(np.abs(r - data["expected." + o.name]).max())
                      for o, r in zip(sess.get_outputs(), outs)}
    return errs


def main_decode(archs, exporters, report):
    """Decode graphs: <arch>_<exporter>_decode.onnx and the cases
    <arch>_decode_<case>.npz (inputs by name, PyTorch's outputs as
    expected.<name>). The hybrid architectures' caches hold recurrent and
    convolution states, not only keys and values: only the onnx27 exporter
    (python -m gatec.export --graph decode) writes theirs, with the states
    named and laid out as its docstring says."""
    for arch in (a for a in archs if a not in HYBRID or a in ONNX27):
        model, attn = build(arch)
        # PyTorch's outputs from the default experts implementation, as for
        # the prefill cases.
        if arch in HYBRID:  # transformers' own cache after a prefill
            cases = {c: gatec_export.reference_decode(model, b, p, pad, b * 100 + p + 1)
                     for c, (b, p, pad) in DECODE_CASES.items()}
        else:
            cases = {c: decode_case(model, *v) for c, v in DECODE_CASES.items()}
        for c, (feeds, expected) in cases.items():
            np.savez(os.path.join(HERE, f"{arch}_decode_{c}.npz"), **feeds,
                     **{"expected." + n: v for n, v in expected.items()})
        for exporter in (e for e in exporters if (e == "onnx27") == (arch in HYBRID)):
            key = f"{arch}_{exporter}_decode"
            path = os.path.join(HERE, key + ".onnx")
            entry = {"attn_implementation": attn}
            errors = []
            for experts in (EXPERTS[exporter] if arch in MOE else [None]):
                m = build(arch, experts)[0] if experts else model
                try:
                    if exporter == "onnx27":
                        gatec_export.export_decode(m, path)
                    else:
                        export_decode(exporter, m, path, cases["b2_p9"][0])
                except Exception as e:
                    if os.path.exists(path):
                        os.remove(path)
                    errors.append((experts, (type(e).__name__ + ": " + str(e))
                                   .splitlines()[0][:300]))
                    traceback.print_exc(limit=2)
                    continue
                if experts:
                    entry["experts_implementation"] = experts
                break
            entry["exported"] = os.path.exists(path)
            if errors:
                entry["export_errors"] = errors
            if entry["exported"]:
                entry["bytes"] = os.path.getsize(path)
                try:
                    entry["ort_max_abs_err"] = check_ort_decode(path, arch)
                except Exception as e:
                    entry["ort_error"] = str(e).splitlines()[0][:300]
            report[key] = entry
            print(key, json.dumps(entry), flush=True)


def check_ort(path, arch):
    """onnxruntime against the recorded PyTorch logits, per case: the max
    abs error over all tokens and over the real ones (attention_mask 1; a
    padding token attends to nothing and its value depends on the SDPA
    backend)."""
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    errs = {}
    for case in CASES | LONG_CASES:
        if not os.path.exists(os.path.join(HERE, f"{arch}_{case}_ids.npy")):
            continue
        ids = np.load(os.path.join(HERE, f"{arch}_{case}_ids.npy"))
        mask = np.load(os.path.join(HERE, f"{arch}_{case}_mask.npy"))
        ref = np.load(os.path.join(HERE, f"{arch}_{case}_logits.npy"))
        try:
            (out,) = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        except Exception as e:  # this case only (a length the export fixed)
            errs[case] = {"error": str(e).splitlines()[0][:300]}
            continue
        d = np.abs(out - ref)
        errs[case] = {"all": float(d.max()), "real": float(d[mask.astype(bool)].max())}
    return errs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated architectures")
    ap.add_argument("--exporters", default="dynamo,ts,onnx27")
    ap.add_argument("--graphs", default="prefill,decode",
                    help="which graphs to export: prefill, decode or both")
    ap.add_argument("--check-only", action="store_true",
                    help="only rerun onnxruntime on the files there")
    args = ap.parse_args()
    archs = [a for a in configs() if not args.only or a in args.only.split(",")]
    report_path = os.path.join(HERE, "exports.json")
    report = json.load(open(report_path)) if os.path.exists(report_path) else {}
    if args.check_only:
        for key, entry in report.items():
            decode = key.endswith("_decode")
            arch = key.removesuffix("_decode").rsplit("_", 1)[0]
            path = os.path.join(HERE, key + ".onnx")
            if arch not in archs or not os.path.exists(path):
                continue
            entry.pop("ort_error", None)
            try:
                entry["ort_max_abs_err"] = (check_ort_decode if decode else check_ort)(path, arch)
            except Exception as e:
                entry.pop("ort_max_abs_err", None)
                entry["ort_error"] = str(e).splitlines()[0][:300]
        archs = []
    if "decode" in args.graphs.split(","):
        main_decode(archs, args.exporters.split(","), report)
    if "prefill" not in args.graphs.split(","):
        archs = []
    for arch in archs:
        model, attn = build(arch)
        for case, (b, t, pad) in (CASES | (LONG_CASES if arch in ONNX27 else {})).items():
            ids, mask = case_inputs(b, t, pad)
            with torch.no_grad():
                logits = Prefill(model)(ids, mask)
            np.save(os.path.join(HERE, f"{arch}_{case}_ids.npy"), ids.numpy())
            np.save(os.path.join(HERE, f"{arch}_{case}_mask.npy"), mask.numpy())
            np.save(os.path.join(HERE, f"{arch}_{case}_logits.npy"),
                    logits.float().numpy())
        for exporter in args.exporters.split(","):
            if exporter == "onnx27" and arch not in ONNX27:
                continue
            path = os.path.join(HERE, f"{arch}_{exporter}.onnx")
            key = f"{arch}_{exporter}"
            entry = {"attn_implementation": attn}
            errors = []
            for experts in (EXPERTS[exporter] if arch in MOE else [None]):
                m = build(arch, experts)[0] if experts else model
                try:
                    export(arch, exporter, m, path)
                except Exception as e:
                    if os.path.exists(path):
                        os.remove(path)
                    errors.append((experts, (type(e).__name__ + ": " + str(e))
                                   .splitlines()[0][:300]))
                    traceback.print_exc(limit=2)
                    continue
                if experts:
                    entry["experts_implementation"] = experts
                break
            entry["exported"] = os.path.exists(path)
            if errors:
                entry["export_errors"] = errors
            if entry["exported"]:
                entry["bytes"] = os.path.getsize(path)
                try:
                    entry["ort_max_abs_err"] = check_ort(path, arch)
                except Exception as e:  # onnxruntime cannot load or run it
                    entry["ort_error"] = str(e).splitlines()[0][:300]
            report[key] = entry
            print(key, json.dumps(entry), flush=True)
    with open(report_path, "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
