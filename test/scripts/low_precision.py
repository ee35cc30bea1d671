#!/usr/bin/env python3
"""fp16 and bf16 variants of committed fp32 models, compiled by gatec and run
against onnxruntime.

The variant (convert() below) holds every fp32 tensor in fp16 or bf16
(weights rounded to nearest even), except what low-precision checkpoints
keep in fp32: the log-decay gates (Softplus, Exp) and the linear-attention
recurrence, and ops whose ONNX schema has no such type (Range; Einsum for
bf16), which compute in fp32 behind Casts.

Reference: onnxruntime (CPU) running the fp32 model on the same weights and
inputs rounded to the low-precision type, i.e. the exact answer for the
values the low-precision model holds. The low-precision model also rounds
every intermediate tensor, so it may differ from that by a few units in the
last place of the type, growing with depth. A run passes when every output
element satisfies

    |got - ref| <= TOL * (1 + |ref|),   TOL = 2**-9 (fp16), 2**-6 (bf16),

i.e. 4 units of the type's rounding error (unit roundoff 2**-11 / 2**-8);
the worst measured is about 1.3 units (6.5e-4 fp16, 5.0e-3 bf16, Llama
block), and a GEMM that drops its last 16 of 64 k steps misses it by 3x.
Accumulation is fp32 in both (MatMul, reductions, softmax, the attention
kernel), which is what keeps the errors near the output rounding.

usage: low_precision.py [--gatec PATH] [--gatec-run PATH] [--filter REGEX]
                        [--dtype f16|bf16]... [--keep DIR] [--gatec-flag F]...
       low_precision.py --convert MODEL.onnx DTYPE OUT.onnx
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "test", "models")
sys.path.insert(0, HERE)
from e2e_models import DYN_RUNS, inputs_for  # noqa: E402

# A spread of the gates and blocks: GLU FFNs, G1-gated attention (token- and
# head-major, static and dynamic), a GTrXL gated residual, the Llama block
# (RMSNorm, RoPE, causal attention, SwiGLU). Not hybrid_qwen3next: its random
# weights make it ill-conditioned (onnxruntime's fp32 outputs move by 0.7,
# scaled, when its fp32 inputs move by 2**-8 relative), so no low-precision
# run of it can be checked against a tolerance that means anything.
DEFAULT_MODELS = ["glu_swiglu", "glu_geglu_tanh", "gated_attn_elementwise",
                  "gated_attn_headwise_dyn", "gated_attn_head_major",
                  "qwen3next_gated_attn", "gtrxl_gru", "llama_block",
                  "llama_block_dyn"]

# Kept in fp32 as low-precision checkpoints keep them (Qwen3-Next computes
# its log-decay gates softplus/exp in fp32 and flash-linear-attention keeps
# the recurrent state in fp32): with a bf16 log-decay g the decay
# exp(sum g) over a chunk is off by |sum g| * 2**-8 in its exponent.
FP32_OPS = ["Softplus", "Exp", "LinearAttention"]

NP = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
TOL = {"f16": 2.0 ** -9, "bf16": 2.0 ** -6}


def reference_model(fp32, low):
    """The fp32 model holding the low-precision model's values: each float
    initializer and Constant value replaced, by name, with its counterpart
    in `low` widened to fp32 (the converter also clips to the type's finite
    range, e.g. a -3.4e38 mask constant)."""
    vals = _tensors(low)
    m = onnx.ModelProto()
    m.CopyFrom(fp32)

    def widened(t, key):
        lo = vals.get(key)
        if lo is None or lo.dtype not in (np.float16, ml_dtypes.bfloat16) or \
                t.data_type != TensorProto.FLOAT:
            return None
        return numpy_helper.from_array(lo.astype(np.float32), t.name)

    for g in [m.graph]:
        for i, t in enumerate(g.initializer):
            r = widened(t, t.name)
            if r is not None:
                g.initializer[i].CopyFrom(r)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR and n.output:
                    r = widened(a.t, (n.output[0], a.name))
                    if r is not None:
                        a.t.CopyFrom(r)
    return m


def _tensors(model):
    """Initializers by name, Constant-like attribute tensors by (node
    output, attribute name), as numpy arrays."""
    out = {}
    for g in [model.graph]:
        for t in g.initializer:
            out[t.name] = numpy_helper.to_array(t)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR and n.output:
                    out[(n.output[0], a.name)] = numpy_helper.to_array(a.t)
    return out


def _fp32_ops(model, dtype):
    """Op types of `model` computed in fp32 in its `dtype` variant: FP32_OPS,
    and those whose ONNX schema (at the model's opset) does not allow the
    type for its first input or output, e.g. Range (both), Einsum and
    ConstantOfShape-9 (no bf16)."""
    lp = {"f16": "tensor(float16)", "bf16": "tensor(bfloat16)"}[dtype]
    opset = {o.domain: o.version for o in model.opset_import}
    ops = set(FP32_OPS)
    for n in model.graph.node:
        dom = "" if n.domain == "ai.onnx" else n.domain
        try:
            sch = onnx.defs.get_schema(n.op_type, opset.get(dom, 1), dom)
        except onnx.defs.SchemaError:
            continue
        tc = {c.type_param_str: c.allowed_type_strs for c in sch.type_constraints}
        for formal in sch.inputs[:1] + sch.outputs[:1]:
            allowed = tc.get(formal.type_str)
            if allowed is not None and "tensor(float)" in allowed and lp not in allowed:
                ops.add(n.op_type)
    return ops


def convert(model, dtype):
    """`model` (fp32 ModelProto, no subgraphs) as an fp16 or bf16 model.

    Every fp32 tensor becomes `dtype` (values rounded to nearest even and
    clipped to the type's finite range: fp16 +-65504, bf16 +-3.39e38),
    except the outputs of the ops in _fp32_ops, which compute in fp32
    behind Casts (one Cast per tensor and direction). Cast(to=FLOAT),
    Constant and ConstantOfShape (default value included) follow their
    node's precision. Inputs and outputs of the graph are `dtype`.

    (onnxruntime.transformers.float16.convert_float_to_float16 does the
    fp16 half of this, but leaves a blocked op's constant operands in fp16
    and its results unconverted for a consumer that is converted: models
    that fail ONNX's type rules.)"""
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
           for n in model.graph.node for a in n.attribute):
        raise ValueError("models with subgraphs are not converted")
    lp = {"f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}[dtype]
    fin = float(np.finfo(np.float16).max) if dtype == "f16" else \
        float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    inferred = onnx.shape_inference.infer_shapes(model)
    elem = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.output) + \
            list(inferred.graph.value_info):
        elem[vi.name] = vi.type.tensor_type.elem_type
    for t in inferred.graph.initializer:
        elem[t.name] = t.data_type
    for n in inferred.graph.node:  # Constants, whatever inference said
        for a in n.attribute:
            if n.op_type == "Constant" and a.type == onnx.AttributeProto.TENSOR:
                elem[n.output[0]] = a.t.data_type
    fp32_ops = _fp32_ops(model, dtype)
    is_float = lambda name: elem.get(name) == TensorProto.FLOAT  # noqa: E731

    def lowered(t):
        a = numpy_helper.to_array(t).astype(np.float32)
        return numpy_helper.from_array(np.clip(a, -fin, fin).astype(NP[dtype]), t.name)

    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    home = {}  # float tensor -> the precision it is produced in
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            home[t.name] = lp
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(lowered(t))
    for vi in g.input:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = lp
            home[vi.name] = lp
    nodes, casts = [], {}

    def operand(name, want):
        if not name or not is_float(name) or home.get(name, want) == want:
            return name
        key = (name, want)
        if key not in casts:
            casts[key] = "%s__to_%s" % (name, "fp32" if want == TensorProto.FLOAT else dtype)
            nodes.append(onnx.helper.make_node("Cast", [name], [casts[key]], to=want,
                                               name=casts[key]))
        return casts[key]

    for n in g.node:
        want = TensorProto.FLOAT if n.op_type in fp32_ops else lp
        for i, name in enumerate(n.input):
            n.input[i] = operand(name, want)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT \
                    and want == lp:
                a.t.CopyFrom(lowered(a.t))
            elif a.name == "to" and n.op_type == "Cast" and a.i == TensorProto.FLOAT:
                a.i = want
        if want == lp and n.op_type == "Constant":  # value_float(s): a tensor
            for a in list(n.attribute):
                if a.name in ("value_float", "value_floats"):
                    v = np.array(a.f if a.name == "value_float" else list(a.floats),
                                 np.float32)
                    n.attribute.remove(a)
                    n.attribute.append(onnx.helper.make_attribute(
                        "value", lowered(numpy_helper.from_array(v))))
        if want == lp and n.op_type == "ConstantOfShape" and \
                not any(a.name == "value" for a in n.attribute) and is_float(n.output[0]):
            n.attribute.append(onnx.helper.make_attribute(  # default: fp32 zero
                "value", lowered(numpy_helper.from_array(np.zeros(1, np.float32)))))
        for o in n.output:
            if is_float(o):
                home[o] = want
        nodes.append(n)
    for o in g.output:
        if o.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        o.type.tensor_type.elem_type = lp
        if home.get(o.name) == TensorProto.FLOAT:  # computed in fp32: the
            inner = o.name + "__fp32"              # output is its Cast
            for n in nodes:
                n.input[:] = [inner if x == o.name else x for x in n.input]
                n.output[:] = [inner if x == o.name else x for x in n.output]
            nodes.append(onnx.helper.make_node("Cast", [inner], [o.name], to=lp))
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]  # stale element types
    return m


def inputs(sess, sizes, rng, dtype):
    """The e2e suite's input draws (e2e_models.inputs_for), float inputs
    rounded to `dtype`."""
    return {k: (v.astype(NP[dtype]) if v.dtype == np.float32 else v)
            for k, v in inputs_for(sess, sizes, rng).items()}


def save_tensor(path, v):
    """`v` for gatec-run: .npy, or a TensorProto .pb for bf16 (numpy has no
    bf16 dtype of its own for the .npy header)."""
    if v.dtype == ml_dtypes.bfloat16:
        path += ".pb"
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(v).SerializeToString())
    else:
        path += ".npy"
        np.save(path, v)
    return path


def run_library(gatec_run, lib, feeds, outputs, prefix):
    """Runs `lib` on `feeds` with gatec-run; returns (outputs, None) or
    (None, the error)."""
    cmd = [gatec_run, lib]
    for k, v in feeds.items():
        cmd.append("--input=%s=@%s" % (k, save_tensor("%s_in_%s" % (prefix, re.sub(r"\W", "_", k)), v)))
    paths = ["%s_out_%s.pb" % (prefix, re.sub(r"\W", "_", o)) for o in outputs]
    cmd += ["--output=%s=@%s" % (o, p) for o, p in zip(outputs, paths)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        out = (r.stdout + r.stderr).strip().splitlines()
        return None, out[-1] if out else "exit %d" % r.returncode
    got = []
    for p in paths:
        t = TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        a = numpy_helper.to_array(t)
        if t.data_type == TensorProto.BFLOAT16 and a.dtype != ml_dtypes.bfloat16:
            a = a.view(ml_dtypes.bfloat16) if a.dtype.itemsize == 2 else a.astype(ml_dtypes.bfloat16)
        got.append(a)
    return got, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--filter", default=".*")
    ap.add_argument("--dtype", action="append", choices=["f16", "bf16"])
    ap.add_argument("--keep")
    ap.add_argument("--gatec-flag", action="append", default=[])
    ap.add_argument("--convert", nargs=3, metavar=("MODEL", "DTYPE", "OUT"))
    args = ap.parse_args()
    if args.convert:
        src, dtype, out = args.convert
        onnx.save(convert(onnx.load(src), dtype), out)
        return 0
    work = args.keep or tempfile.mkdtemp(prefix="gatec-lp-")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    failures = runs = 0
    names = [n for n in DEFAULT_MODELS if re.search(args.filter, n)]
    for dtype in args.dtype or ["f16", "bf16"]:
        for name in names:
            fp32 = onnx.load(os.path.join(MODELS, name + ".onnx"))
            tag = "%s_%s" % (name, dtype)
            model = os.path.join(work, tag + ".onnx")
            low = convert(fp32, dtype)
            onnx.checker.check_model(low, full_check=True)  # valid ONNX
            onnx.save(low, model)
            lib = os.path.join(work, tag + ".so")
            c = subprocess.run([args.gatec, model, "-o", lib] + args.gatec_flag,
                               capture_output=True, text=True)
            if c.returncode != 0:
                err = c.stderr.strip().splitlines()
                print("FAIL %-30s compile: %s" % (tag, err[-1] if err else c.returncode))
                failures += 1
                continue
            sess = ort.InferenceSession(
                reference_model(fp32, low).SerializeToString(),
                providers=["CPUExecutionProvider"])
            dynamic = any(not isinstance(d, int)
                          for i in sess.get_inputs() for d in i.shape)
            ok, worst = True, 0.0
            for sizes in (DYN_RUNS if dynamic else DYN_RUNS[1:2]):
                feeds = inputs(sess, sizes, rng, dtype)
                refs = sess.run(None, {k: (v.astype(np.float32)
                                           if v.dtype == NP[dtype] else v)
                                       for k, v in feeds.items()})
                got, err = run_library(args.gatec_run, lib, feeds,
                                       [o.name for o in sess.get_outputs()],
                                       os.path.join(work, tag))
                runs += 1
                if err is None:
                    for o, g, r in zip(sess.get_outputs(), got, refs):
                        if g.dtype != NP[dtype] or g.shape != r.shape:
                            err = "output %s: %s %s, expected %s %s" % (
                                o.name, g.dtype, g.shape, np.dtype(NP[dtype]), r.shape)
                            break
                        e = np.abs(g.astype(np.float32) - r) / (1 + np.abs(r))
                        worst = max(worst, float(np.nanmax(e)) if e.size else 0.0)
                        if not np.all(e <= TOL[dtype]):  # NaN fails too
                            i = np.unravel_index(np.argmax(np.nan_to_num(e, nan=np.inf)), e.shape)
                            err = "output %s at %s: %g, reference %g (scaled error %.2e)" % (
                                o.name, list(i), float(g[i]), float(r[i]), float(e[i]))
                            break
                if err is not None:
                    ok = False
                    print("FAIL %-30s %s: %s" % (tag, sizes if dynamic else "static", err))
            if ok:
                print("ok   %-30s %-8s max scaled error %.2e (tolerance %.1e)" % (
                    tag, "3 shapes" if dynamic else "", worst, TOL[dtype]))
            failures += not ok
    print("low precision: %d models, %d runs, %d failures" % (
        len(names) * len(args.dtype or ["f16", "bf16"]), runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
