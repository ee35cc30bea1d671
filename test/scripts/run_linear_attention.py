#!/usr/bin/env python3
"""Runs ONNX LinearAttention-27 models through gatec on the CPU and compares
output and present_state with an fp64 sequential recurrence
(gated_reference.linear_attention, written from the op's maths).

Every update rule (linear, gated with per-key-channel and per-head decay,
delta, gated_delta), GQA, with and without past_state, beta per head and
shared, T not a multiple of the chunk size, and followed by Gated
DeltaNet's gated RMSNorm (fused into the op's epilogue, and not); each model in the recurrent
form (the gated phase's IR resumed after `fused`) and the chunked form
(the default pipeline's chunk 16, and chunk 64 through gatec-opt
--chunk-linear-attention), and chunk 16 in the CUDA target's form
(gatec --cpu-thread-mapping: the products as linalg contractions spread
over a block's threads, run on the CPU). Stress: log-decays from -1e-4 to -30 per token, some
exactly 0, T = 4096: no NaN/Inf and the same tolerance. Resets: log-decays of
-inf at some tokens (a full reset of the state), in every form.

Low precision: the same op with f16/bf16 operands and results (the stress
cases at T = 4096 and short ones), against the fp64 recurrence of the
rounded inputs.

Pass criterion per output: relative RMS error
sqrt(mean((got - ref)^2)) / sqrt(mean(ref^2)) <= 1e-5 (f16/bf16: 5e-3),
all values finite.

usage: run_linear_attention.py --gatec-opt PATH [--gatec PATH]
       [--gatec-run PATH] [--keep DIR] [--quick]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
import gated_reference as ref  # noqa: E402

TOL = 1e-5
# f16/bf16 operands: the output and state are rounded to the type at the end
# (bf16 keeps 8 significant bits: a relative RMS of ~1e-3 from that alone);
# the arithmetic is f32 (issue 17: <= 5e-3 against the fp64 recurrence).
LOWP_TOL = 5e-3


LOWP = {"f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}


NORM_EPS = 1e-6


def make_model(path, rule, B, Hq, Hkv, Dk, Dv, decay_kind, beta_kind, state, dtype=None,
               norm=False):
    """LinearAttention-27 with a dynamic sequence length T; with `dtype`
    (f16/bf16) its operands and results are in that type (fp32 graph inputs
    and outputs, Cast in and out). With `norm`, Gated DeltaNet's gated
    RMSNorm follows, as Qwen3-Next writes it: the output's rows of Dv
    through RMSNormalization-23 (weight `norm_w`, an initializer) times
    silu(z) for an input z of the output's shape."""
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("query", f, [B, "T", Hq * Dk]),
           helper.make_tensor_value_info("key", f, [B, "T", Hkv * Dk]),
           helper.make_tensor_value_info("value", f, [B, "T", Hkv * Dv])]
    names = ["query", "key", "value", "", "", ""]
    if state:
        ins.append(helper.make_tensor_value_info("past_state", f, [B, Hkv, Dk, Dv]))
        names[3] = "past_state"
    if decay_kind:
        ins.append(helper.make_tensor_value_info(
            "decay", f, [B, "T", Hkv * Dk if decay_kind == "channel" else Hkv]))
        names[4] = "decay"
    if beta_kind:
        ins.append(helper.make_tensor_value_info(
            "beta", f, [B, "T", Hkv if beta_kind == "heads" else 1]))
        names[5] = "beta"
    while names and names[-1] == "":
        names.pop()
    cast_in, cast_out, results = [], [], ["output", "present_state"]
    if dtype:
        cast_in = [helper.make_node("Cast", [n], [n + "_lp"], to=LOWP[dtype])
                   for n in names if n]
        names = [n + "_lp" if n else n for n in names]
        cast_out = [helper.make_node("Cast", [r + "_lp"], [r], to=f) for r in results]
        results = [r + "_lp" for r in results]
    inits = []
    if norm and dtype:
        raise ValueError("make_model: the gated RMSNorm is built for fp32 models only")
    if norm:
        results = ["la_output"] + results[1:]
    nodes = cast_in + [helper.make_node("LinearAttention", names, results, name="la",
                                        q_num_heads=Hq, kv_num_heads=Hkv,
                                        update_rule=rule)] + cast_out
    if norm:
        ins.append(helper.make_tensor_value_info("z", f, [B, "T", Hq * Dv]))
        w = np.random.default_rng(7).uniform(0.5, 1.5, Dv).astype(np.float32)
        inits = [onnx.numpy_helper.from_array(w, "norm_w"),
                 onnx.numpy_helper.from_array(np.array([-1, Dv], np.int64), "rows")]
        nodes += [
            helper.make_node("Reshape", ["la_output", "rows"], ["o_rows"]),
            helper.make_node("RMSNormalization", ["o_rows", "norm_w"], ["o_norm"],
                             axis=-1, epsilon=NORM_EPS, name="norm"),
            helper.make_node("Reshape", ["z", "rows"], ["z_rows"]),
            helper.make_node("Sigmoid", ["z_rows"], ["z_sig"]),
            helper.make_node("Mul", ["z_rows", "z_sig"], ["z_silu"]),
            helper.make_node("Mul", ["o_norm", "z_silu"], ["y_rows"]),
            helper.make_node("Shape", ["z"], ["z_shape"]),
            # (allowzero: z's shape may hold a 0, at T = 0)
            helper.make_node("Reshape", ["y_rows", "z_shape"], ["output"], allowzero=1),
        ]
    outs = [helper.make_tensor_value_info("output", f, [B, "T", Hq * Dv]),
            helper.make_tensor_value_info("present_state", f, [B, Hkv, Dk, Dv])]
    g = helper.make_graph(nodes, "la", ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)])
    onnx.save(m, path)
    return [i.name for i in ins]


def make_quadratic_model(path, B, H, Dk, Dv, scale):
    """((scale·Q Kᵀ) ⊙ tril(exp(tril(G − Gᵀ)))) V with G = CumSum_T(g): the
    quadratic form that --raise-linear-attention turns into the chunked op."""
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("q", f, [B, H, "T", Dk]),
           helper.make_tensor_value_info("k", f, [B, H, "T", Dk]),
           helper.make_tensor_value_info("v", f, [B, H, "T", Dv]),
           helper.make_tensor_value_info("g", f, [B, H, "T", 1])]
    inits = [helper.make_tensor("scale", f, [], [scale]),
             helper.make_tensor("axis", TensorProto.INT64, [], [2])]
    n = helper.make_node
    nodes = [n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
             n("MatMul", ["q", "kt"], ["s0"]), n("Mul", ["s0", "scale"], ["s"]),
             n("CumSum", ["g", "axis"], ["G"]),
             n("Transpose", ["G"], ["Gt"], perm=[0, 1, 3, 2]),
             n("Sub", ["G", "Gt"], ["dG"]), n("Trilu", ["dG"], ["dGl"], upper=0),
             n("Exp", ["dGl"], ["e"]), n("Trilu", ["e"], ["D"], upper=0),
             n("Mul", ["s", "D"], ["a"]), n("MatMul", ["a", "v"], ["o"])]
    outs = [helper.make_tensor_value_info("o", f, [B, H, "T", Dv])]
    m = helper.make_model(helper.make_graph(nodes, "quadratic", ins, outs, inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)


def log_decays(rng, shape, stress):
    if stress == "reset":
        # Full resets: a log-decay of -inf (decay 0) at some tokens, the
        # state before them forgotten; no NaN from -inf - (-inf).
        g = -rng.uniform(0.01, 1.0, shape)
        g[rng.random(shape) < 0.08] = -np.inf
        return g
    if not stress:
        return -rng.uniform(0.01, 1.0, shape)
    # -1e-4 ... -30 log-uniformly, and some tokens with decay exactly 1.
    g = -np.exp(rng.uniform(np.log(1e-4), np.log(30.0), shape))
    g[rng.random(shape) < 0.1] = 0.0
    return g


def make_inputs(rng, names, rule, B, T, Hq, Hkv, Dk, Dv, decay_kind, beta_kind, stress):
    q = rng.standard_normal((B, T, Hq, Dk))
    k = rng.standard_normal((B, T, Hkv, Dk))
    if rule in ("delta", "gated_delta"):
        k /= np.linalg.norm(k, axis=-1, keepdims=True)  # L2-normalised keys
    v = rng.standard_normal((B, T, Hkv, Dv))
    x = {"query": q.reshape(B, T, -1), "key": k.reshape(B, T, -1),
         "value": v.reshape(B, T, -1)}
    if "past_state" in names:
        x["past_state"] = rng.standard_normal((B, Hkv, Dk, Dv)) * 0.5
    if decay_kind:
        x["decay"] = log_decays(rng, (B, T, Hkv * Dk if decay_kind == "channel" else Hkv), stress)
    if beta_kind:
        x["beta"] = rng.uniform(0.05, 1.0, (B, T, Hkv if beta_kind == "heads" else 1))
    if "z" in names:
        x["z"] = rng.standard_normal((B, T, Hq * Dv)) * 2.0
    return {n: a.astype(np.float32) for n, a in x.items()}


def rounded(x, dtype):
    """The inputs as the model's Cast to f16/bf16 leaves them (round to
    nearest even), back in fp32: what the reference must start from."""
    if not dtype:
        return x
    import ml_dtypes
    t = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    return {n: a.astype(t).astype(np.float32) for n, a in x.items()}


def reference(x, rule, Hq, Hkv, Dk, Dv):
    B, T, _ = x["query"].shape
    heads = lambda a, h: a.astype(np.float64).reshape(B, T, h, -1).transpose(0, 2, 1, 3)
    q, k, v = heads(x["query"], Hq), heads(x["key"], Hkv), heads(x["value"], Hkv)
    decay = heads(x["decay"], Hkv) if "decay" in x else None
    beta = heads(x["beta"], x["beta"].shape[2]) if "beta" in x else None
    o, s = ref.linear_attention(q, k, v, rule, 1.0 / np.sqrt(Dk), decay, beta,
                                x.get("past_state"))
    o = o.transpose(0, 2, 1, 3).reshape(B, T, Hq * Dv)
    if "z" in x:
        # Gated DeltaNet's gated RMSNorm over each head's row of Dv.
        w = np.random.default_rng(7).uniform(0.5, 1.5, Dv).astype(np.float32)
        rows = o.reshape(-1, Dv)
        z = x["z"].astype(np.float64).reshape(-1, Dv)
        rows = rows / np.sqrt(np.mean(rows ** 2, axis=-1, keepdims=True) + NORM_EPS)
        o = (rows * w * z / (1.0 + np.exp(-z))).reshape(B, T, Hq * Dv)
    return o, s


def rel_rms(got, want):
    den = np.sqrt(np.mean(want ** 2))
    return float(np.sqrt(np.mean((got.astype(np.float64) - want) ** 2)) / max(den, 1e-300))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec-opt", required=True)
    ap.add_argument("--gatec")
    ap.add_argument("--gatec-run")
    ap.add_argument("--keep")
    ap.add_argument("--quick", action="store_true", help="skip the T=4096 stress cases")
    a = ap.parse_args()
    bindir = os.path.dirname(shutil.which(a.gatec_opt) or a.gatec_opt)
    gatec = a.gatec or os.path.join(bindir, "gatec")
    gatec_run = a.gatec_run or os.path.join(bindir, "gatec-run")
    work = a.keep or tempfile.mkdtemp(prefix="gatec-la-")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261130)

    # name, rule, B, Hq, Hkv, Dk, Dv, decay, beta, state, sequence lengths
    # [, operand type f16/bf16]
    cases = [
        ("linear", "linear", 2, 2, 2, 8, 8, None, None, False, [1, 37]),
        ("gated_channel_gqa_state", "gated", 1, 4, 2, 8, 6, "channel", None, True, [37, 64]),
        ("gated_head", "gated", 2, 2, 2, 8, 8, "head", None, False, [37]),
        ("delta_state_beta1", "delta", 1, 2, 2, 8, 8, None, "one", True, [37]),
        ("gated_delta_gqa", "gated_delta", 2, 4, 1, 8, 8, "head", "heads", False, [5, 37, 70]),
        ("gated_delta_channel_state", "gated_delta", 1, 2, 2, 8, 4, "channel", "heads", True, [37]),
    ]
    if not a.quick:
        cases += [
            ("stress_gated_channel", "gated", 1, 2, 2, 16, 16, "channel", None, False, [4096]),
            ("stress_gated_head", "gated", 1, 2, 2, 16, 16, "head", None, True, [4096]),
            ("stress_gated_delta", "gated_delta", 1, 4, 2, 16, 16, "head", "heads", True, [4096]),
            # Low precision: operands and results in bf16/fp16.
            ("stress_gated_channel_bf16", "gated", 1, 2, 2, 16, 16, "channel", None, False,
             [4096], "bf16"),
            ("stress_gated_delta_bf16", "gated_delta", 1, 4, 2, 16, 16, "head", "heads", True,
             [4096], "bf16"),
            ("stress_gated_delta_f16", "gated_delta", 1, 4, 2, 16, 16, "head", "heads", True,
             [4096], "f16"),
        ]
    cases += [
        ("gated_delta_bf16", "gated_delta", 2, 4, 2, 8, 8, "head", "heads", True, [1, 70], "bf16"),
        ("gated_channel_f16", "gated", 1, 2, 2, 8, 8, "channel", None, True, [37], "f16"),
    ]
    # Gated DeltaNet's gated RMSNorm after the op (norm_*): fused into its
    # epilogue by --fuse-linear-attention-epilogue in the chunked forms and
    # recurrent_fused, a kernel of its own in recurrent (the gated phase's
    # IR resumed after `fused`). T = 1 and T not a multiple of
    # the chunk (the tail's rows).
    cases += [
        ("norm_gated_delta_gqa", "gated_delta", 2, 4, 2, 8, 8, "head", "heads", True,
         [1, 37, 70]),
        ("norm_gated_channel", "gated", 1, 2, 2, 8, 16, "channel", None, False, [16, 21]),
    ]
    cases += [
        ("reset_gated_head", "gated", 1, 2, 2, 8, 8, "head", None, True, [37, 70]),
        ("reset_gated_channel", "gated", 1, 2, 2, 8, 8, "channel", None, False, [70]),
        ("reset_gated_delta", "gated_delta", 2, 2, 1, 8, 8, "head", "heads", True, [37]),
    ]
    failures = 0
    total = 0
    worst = worst_lowp = 0.0
    for name, rule, B, Hq, Hkv, Dk, Dv, dk_, bk, st, lengths, *lowp in cases:
        dtype = lowp[0] if lowp else None
        tol = LOWP_TOL if dtype else TOL
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        model = os.path.join(d, "model.onnx")
        norm = name.startswith("norm_")
        names = make_model(model, rule, B, Hq, Hkv, Dk, Dv, dk_, bk, st, dtype, norm)
        gated_ir = os.path.join(d, "gated.mlir")
        run([gatec, model, "--compile-to=gated", "-o", gated_ir])
        libs = {}
        libs["recurrent"] = os.path.join(d, "recurrent.so")
        run([gatec, gated_ir, "--compile-from=fused", "-o", libs["recurrent"]])
        libs["chunked16"] = os.path.join(d, "chunked16.so")
        run([gatec, model, "-o", libs["chunked16"]])
        # The GPU's form (products as linalg ops spread over a block's
        # threads by --distribute-to-threads), run on the CPU.
        libs["chunked16_threads"] = os.path.join(d, "chunked16_threads.so")
        run([gatec, model, "--cpu-thread-mapping", "-o", libs["chunked16_threads"]])
        if norm:
            # The recurrent form with the norm in its epilogue.
            fusedr = os.path.join(d, "fused_recurrent.mlir")
            run([a.gatec_opt, gated_ir, "--absorb-head-layout",
                 "--fuse-linear-attention-epilogue", "--mlir-print-debuginfo", "-o", fusedr])
            if "norm_gate(" not in open(fusedr).read():
                raise RuntimeError("%s: the gated RMSNorm was not fused" % name)
            libs["recurrent_fused"] = os.path.join(d, "recurrent_fused.so")
            run([gatec, fusedr, "--compile-from=fused", "-o", libs["recurrent_fused"]])
            if "norm_gate(" not in run([gatec, model, "--compile-to=fused"]):
                raise RuntimeError("%s: the pipeline did not fuse the gated RMSNorm" % name)
        fused64 = os.path.join(d, "fused64.mlir")
        # (Locations kept: the weight check names initializers by them.)
        run([a.gatec_opt, gated_ir, "--chunk-linear-attention=chunk-size=64",
             "--absorb-head-layout", "--fuse-linear-attention-epilogue",
             "--mlir-print-debuginfo", "-o", fused64])
        libs["chunked64"] = os.path.join(d, "chunked64.so")
        run([gatec, fused64, "--compile-from=fused", "-o", libs["chunked64"]])
        for T in lengths:
            x = make_inputs(rng, names, rule, B, T, Hq, Hkv, Dk, Dv, dk_, bk, "reset" if name.startswith("reset")
                            else name.startswith("stress"))
            args = []
            for n in names:
                p = os.path.join(d, "%s_T%d.npy" % (n, T))
                np.save(p, x[n])
                args.append("--input=%s=@%s" % (n, p))
            want_o, want_s = reference(rounded(x, dtype), rule, Hq, Hkv, Dk, Dv)
            for form, lib in libs.items():
                po = os.path.join(d, "out_%s_T%d.npy" % (form, T))
                ps = os.path.join(d, "state_%s_T%d.npy" % (form, T))
                run([gatec_run, lib] + args + ["--output=output=@" + po,
                                               "--output=present_state=@" + ps])
                got_o, got_s = np.load(po), np.load(ps)
                eo, es = rel_rms(got_o, want_o), rel_rms(got_s, want_s)
                finite = bool(np.isfinite(got_o).all() and np.isfinite(got_s).all())
                ok = finite and eo <= tol and es <= tol
                total += 1
                if dtype:
                    worst_lowp = max(worst_lowp, eo, es)
                else:
                    worst = max(worst, eo, es)
                if not ok:
                    failures += 1
                print("%-4s %-28s T=%-5d %-10s output %.2e  state %.2e%s" % (
                    "ok" if ok else "FAIL", name, T, form, eo, es,
                    "" if finite else "  NaN/Inf"))
    # The quadratic form, raised to the chunked op (the fused phase shows it).
    d = os.path.join(work, "quadratic")
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, "model.onnx")
    B, H, Dk, Dv = 1, 2, 8, 8
    make_quadratic_model(model, B, H, Dk, Dv, 0.25)
    fused = run([gatec, model, "--compile-to=fused"])
    raised = "gated.linear_attention gated chunked" in fused
    lib = os.path.join(d, "q.so")
    run([gatec, model, "-o", lib])
    for T in (37, 256):
        x = {"q": rng.standard_normal((B, H, T, Dk)), "k": rng.standard_normal((B, H, T, Dk)),
             "v": rng.standard_normal((B, H, T, Dv)), "g": -rng.uniform(0.01, 1.0, (B, H, T, 1))}
        x = {n: a.astype(np.float32) for n, a in x.items()}
        args = []
        for n, arr in x.items():
            p = os.path.join(d, "%s_T%d.npy" % (n, T))
            np.save(p, arr)
            args.append("--input=%s=@%s" % (n, p))
        po = os.path.join(d, "o_T%d.npy" % T)
        run([gatec_run, lib] + args + ["--output=o=@" + po])
        want, _ = ref.linear_attention(x["q"], x["k"], x["v"], "gated", 0.25, x["g"])
        eo = rel_rms(np.load(po), want)
        ok = raised and eo <= TOL and np.isfinite(np.load(po)).all()
        total += 1
        failures += not ok
        worst = max(worst, eo)
        print("%-4s %-28s T=%-5d %-10s output %.2e%s" % (
            "ok" if ok else "FAIL", "quadratic_form_raised", T, "chunked16", eo,
            "" if raised else "  (not raised to gated.linear_attention)"))
    print("linear attention on the CPU: %d runs, %d failures, worst relative RMS %.2e "
          "(fp32), %.2e (f16/bf16 operands)" % (total, failures, worst, worst_lowp))
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
