#!/usr/bin/env python3
"""Runs an ONNX model on the CPU through gatec's linalg lowering.

run_model(onnx_path, inputs) imports the model with
`gatec MODEL --compile-to=gated`, adds a @main that calls @main_graph on the
inputs (as constants, exact bytes) and prints every output, lowers the
module with `gatec-opt --convert-gated-to-linalg --convert-onnx-to-linalg`
and MLIR's upstream pipeline, executes it with mlir-runner, and returns the
outputs as numpy arrays. Outputs are printed bit-exactly: floats are
bitcast to integers of their width (f16/bf16 are widened to f32 first) and
printed with printMemrefI32/I64; integers are widened to i64, bools too.

usage as a script: mlir_run.py MODEL.onnx [--phase gated|onnx] [--dyn 2,5,3]
                                [--seed N] [--keep DIR]
  runs the model on random inputs (symbolic dims get the sizes of --dyn)
  and compares with onnxruntime.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LLVM = "/usr/lib/llvm-22"
TOOLS = {
    "gatec": os.path.join(ROOT, "build", "bin", "gatec"),
    "gatec_opt": os.path.join(ROOT, "build", "bin", "gatec-opt"),
    "mlir_runner": os.path.join(LLVM, "bin", "mlir-runner"),
}
PIPELINE = [
    "--convert-linear-attention-to-loops", "--convert-gated-to-linalg", "--convert-onnx-to-linalg",
    "--one-shot-bufferize=bufferize-function-boundaries",
    "--convert-linalg-to-loops", "--memref-expand", "--expand-strided-metadata",
    "--lower-affine",
    "--convert-scf-to-cf", "--convert-math-to-llvm", "--convert-math-to-libm",
    "--convert-to-llvm", "--reconcile-unrealized-casts",
]
RUNTIME_LIBS = [os.path.join(LLVM, "lib", l) for l in
                ["libmlir_runner_utils.so", "libmlir_c_runner_utils.so"]]

# MLIR element type -> (numpy dtype, printed integer type, how to print)
ELEMENTS = {
    "f32": (np.float32, "i32", "bitcast"),
    "f64": (np.float64, "i64", "bitcast"),
    "f16": (np.float16, "i32", "extf"),
    "bf16": (None, "i32", "extf"),
    "i64": (np.int64, "i64", None),
    "i32": (np.int32, "i64", "extsi"),
    "i16": (np.int16, "i64", "extsi"),
    "i8": (np.int8, "i64", "extsi"),
    "i1": (np.bool_, "i64", "extui"),
    # unsigned: the scalars cross to signless (arith has no unsigned types)
    "ui64": (np.uint64, "i64", "unsigned"),
    "ui32": (np.uint32, "i64", "unsigned"),
    "ui16": (np.uint16, "i64", "unsigned"),
    "ui8": (np.uint8, "i64", "unsigned"),
}
NP_TO_MLIR = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
              np.dtype(np.float16): "f16", np.dtype(np.int64): "i64",
              np.dtype(np.int32): "i32", np.dtype(np.int16): "i16",
              np.dtype(np.int8): "i8", np.dtype(np.bool_): "i1",
              np.dtype(np.uint64): "ui64", np.dtype(np.uint32): "ui32",
              np.dtype(np.uint16): "ui16", np.dtype(np.uint8): "ui8"}


class RunError(Exception):
    """A step of the run failed; the message holds the tool's stderr."""


def tensor_type(shape, elem):
    dims = "x".join("?" if d is None or d < 0 else str(d) for d in shape)
    return "tensor<%s%s>" % (dims + "x" if dims else "", elem)


def literal(a):
    """An exact dense literal of a numpy array."""
    if a.dtype == np.bool_:
        def nest(x):
            if x.ndim == 0:
                return "true" if x else "false"
            return "[" + ", ".join(nest(v) for v in x) + "]"
        return "dense<%s>" % nest(a)
    return 'dense<"0x%s">' % np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes().hex().upper()


def signature(text):
    """(argument types, result types) of @main_graph in gated IR."""
    m = re.search(r"func\.func @main_graph\((.*)", text)
    if not m:
        raise RunError("no @main_graph in the gated IR")
    line = m.group(1)
    args, _, results = line.partition(") -> ")
    if not results:  # no results
        args = line
    argtypes = re.findall(r"%arg\d+: (tensor<[^>]*>)", args)
    restypes = re.findall(r"tensor<[^>]*>", results.split(" {\n")[0]) if results else []
    return argtypes, restypes


def parse_type(t):
    body = t[len("tensor<"):-1].split("x")
    return [None if d == "?" else int(d) for d in body[:-1]], body[-1]


def printer(i, value, rtype):
    """MLIR lines printing result `value` of type `rtype` exactly."""
    shape, elem = parse_type(rtype)
    if elem not in ELEMENTS:
        raise RunError("cannot print outputs of type " + rtype)
    _, ptype, how = ELEMENTS[elem]
    lines = []
    src = value
    if how:
        dyn = []
        for d, s in enumerate(shape):
            if s is None:
                lines.append("    %%c%d_%d = arith.constant %d : index" % (i, d, d))
                lines.append("    %%d%d_%d = tensor.dim %s, %%c%d_%d : %s" % (i, d, value, i, d, rtype))
                dyn.append("%%d%d_%d" % (i, d))
        ptt = tensor_type(shape, ptype)
        lines.append("    %%e%d = tensor.empty(%s) : %s" % (i, ", ".join(dyn), ptt))
        ids = ", ".join("d%d" % d for d in range(len(shape)))
        imap = "affine_map<(%s) -> (%s)>" % (ids, ids)
        body = {
            "bitcast": ["%%b = arith.bitcast %%x : %s to %s" % (elem, ptype)],
            "extsi": ["%%b = arith.extsi %%x : %s to %s" % (elem, ptype)],
            "extui": ["%%b = arith.extui %%x : %s to %s" % (elem, ptype)],
            "extf": ["%%f = arith.extf %%x : %s to f32" % elem,
                     "%b = arith.bitcast %f : f32 to i32"],
            "unsigned": ["%%s = builtin.unrealized_conversion_cast %%x : %s to i%s" % (elem, elem[2:]),
                         "%%b = arith.extui %%s : i%s to i64" % elem[2:] if elem != "ui64"
                         else "%b = arith.ori %s, %s : i64"],
        }[how]
        lines.append("    %%p%d = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]} "
                     "ins(%s : %s) outs(%%e%d : %s) {" % (
                         i, imap, imap, ", ".join(['"parallel"'] * len(shape)), value, rtype, i, ptt))
        lines.append("    ^bb0(%%x: %s, %%o: %s):" % (elem, ptype))
        lines += ["      " + l for l in body]
        lines.append("      linalg.yield %b : " + ptype)
        lines.append("    } -> " + ptt)
        src, rtype = "%%p%d" % i, ptt
    fn = "printMemrefI32" if ptype == "i32" else "printMemrefI64"
    lines.append("    %%u%d = tensor.cast %s : %s to tensor<*x%s>" % (i, src, rtype, ptype))
    lines.append("    call @%s(%%u%d) : (tensor<*x%s>) -> ()" % (fn, i, ptype))
    return lines


def driver(inputs, argtypes, restypes):
    """A @main that runs @main_graph on `inputs` and prints its results."""
    if len(inputs) != len(argtypes):
        raise RunError("the model takes %d inputs, %d given" % (len(argtypes), len(inputs)))
    lines = ["  func.func @main() {"]
    args = []
    for i, (a, t) in enumerate(zip(inputs, argtypes)):
        ct = tensor_type(a.shape, NP_TO_MLIR[a.dtype])
        lines.append("    %%in%d = arith.constant %s : %s" % (i, literal(a), ct))
        if ct != t:
            lines.append("    %%arg%d = tensor.cast %%in%d : %s to %s" % (i, i, ct, t))
        else:
            lines.append("    %%arg%d = tensor.cast %%in%d : %s to %s" % (i, i, ct, ct))
        args.append("%%arg%d" % i)
    n = len(restypes)
    res = "%r" if n == 1 else "%%r:%d" % n
    lines.append("    %s = call @main_graph(%s) : (%s) -> (%s)" % (
        res, ", ".join(args), ", ".join(argtypes), ", ".join(restypes)))
    for i, t in enumerate(restypes):
        lines += printer(i, "%r" if n == 1 else "%%r#%d" % i, t)
    lines.append("    return")
    lines.append("  }")
    lines.append("  func.func private @printMemrefI32(tensor<*xi32>)")
    lines.append("  func.func private @printMemrefI64(tensor<*xi64>)")
    return "\n".join(lines) + "\n"


def with_driver(gated, inputs):
    argtypes, restypes = signature(gated)
    text = driver(inputs, argtypes, restypes)
    m = re.search(r"^module\b[^\n]*\{\n", gated, re.M)
    if not m:
        raise RunError("no module in the gated IR")
    return gated[:m.end()] + text + gated[m.end():], restypes


def parse_outputs(stdout, restypes):
    blocks = stdout.split("Unranked Memref")[1:]
    if len(blocks) != len(restypes):
        raise RunError("expected %d printed outputs, got %d:\n%s" % (len(restypes), len(blocks), stdout[-2000:]))
    outs = []
    for blk, t in zip(blocks, restypes):
        _, elem = parse_type(t)
        sizes = [int(x) for x in re.search(r"sizes = \[([^\]]*)\]", blk).group(1).split(",") if x.strip()]
        data = blk.split("data =", 1)[1]
        n = int(np.prod(sizes))
        ints = np.array([int(x) for x in re.findall(r"-?\d+", data)][:n], np.int64)
        dtype, ptype, how = ELEMENTS[elem]
        if how == "bitcast" or (how == "unsigned" and elem == "ui64"):
            vals = ints.astype(np.int32 if ptype == "i32" else np.int64).view(dtype)
        elif how == "extf":
            vals = ints.astype(np.int32).view(np.float32)
            if dtype is not None:
                vals = vals.astype(dtype)
        else:
            vals = ints.astype(dtype)
        outs.append(vals.reshape(sizes))
    return outs


def run(cmd, stdin=None, what=""):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise RunError("%s failed (%s):\n%s" % (what or cmd[0], " ".join(cmd[:2]), p.stderr[-4000:]))
    return p.stdout


def run_model(onnx_path, inputs, keep=None, tools=None, phase="gated"):
    """Runs `onnx_path` on `inputs` (a list of numpy arrays, in the model's
    input order) through the linalg lowering; returns the outputs in order.
    `phase` is the gatec phase lowered from: "gated" (gates raised, the
    rest onnx ops) or "onnx" (every op lowered by --convert-onnx-to-linalg).
    Raises RunError with the failing tool's message."""
    tools = dict(TOOLS, **(tools or {}))
    with tempfile.TemporaryDirectory() as tmp:
        gated_path = os.path.join(tmp, "gated.mlir")
        run([tools["gatec"], onnx_path, "--compile-to=" + phase, "-o", gated_path], what="gatec")
        gated = open(gated_path).read()
    module, restypes = with_driver(gated, [np.asarray(a) for a in inputs])
    if keep:
        os.makedirs(keep, exist_ok=True)
        open(os.path.join(keep, "module.mlir"), "w").write(module)
    lowered = run([tools["gatec_opt"], "-"] + PIPELINE, module, "gatec-opt")
    if keep:
        open(os.path.join(keep, "lowered.mlir"), "w").write(lowered)
    out = run([tools["mlir_runner"], "-e", "main", "-entry-point-result=void",
               "-shared-libs=" + ",".join(RUNTIME_LIBS)], lowered, "mlir-runner")
    return parse_outputs(out, restypes)


def scaled_error(got, want):
    """max |got - want| / (1 + |want|); inf on a shape mismatch."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
        return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    err = np.where(same, 0.0, np.abs(g - w) / (1 + np.abs(w)))
    return float(np.nanmax(np.where(np.isnan(err), np.inf, err)))


def random_inputs(model_path, rng, dyn=(2, 5, 3, 4)):
    """Random inputs for a model: each distinct symbolic dim (dim_param or
    unnamed) gets the next size of `dyn`, so that mixing two of them up
    shows."""
    import onnx
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    sizes = {}
    out = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
                continue
            key = d.dim_param or ("?", len(sizes))
            sizes.setdefault(key, dyn[len(sizes) % len(dyn)])
            shape.append(sizes[key])
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(dtype, np.floating):
            out.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == np.bool_:
            out.append(rng.random(shape) > 0.5)
        else:
            out.append(rng.integers(0, 4, shape).astype(dtype))
    return out


def reference(model_path, inputs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    s = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: a for i, a in zip(s.get_inputs(), inputs)}
    return s.run(None, feeds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dyn", default="2,5,3,4",
                    help="sizes given to the symbolic dims, in order")
    ap.add_argument("--phase", default="gated", choices=["gated", "onnx"])
    ap.add_argument("--keep")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    inputs = random_inputs(args.model, rng, [int(x) for x in args.dyn.split(",")])
    want = reference(args.model, inputs)
    got = run_model(args.model, inputs, keep=args.keep, phase=args.phase)
    for i, (g, w) in enumerate(zip(got, want)):
        print("output %d %s: max scaled error %.2e" % (i, w.shape, scaled_error(g, w)))


if __name__ == "__main__":
    main()
