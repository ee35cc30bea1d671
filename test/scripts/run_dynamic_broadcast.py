#!/usr/bin/env python3
"""Element-wise broadcasting of dynamic dims decided at run time.

ONNX (multidirectional) broadcasting lets a dynamic dim be 1 at run time
while the other operand's is N. Each model here (onnx.helper, symbolic dims
with distinct names) is compiled once by gatec into a library and run by
gatec-run at several shapes: one side 1 and the other N, both directions,
both 1, neither broadcasting; the outputs are compared with onnxruntime's
(1e-5). Sizes that are neither equal nor 1 must stop the run with gatec's
message (a cf.assert, which --lower-run-time-checks makes the run's error: gatec-run
exits 1 with the message, no signal).

usage: run_dynamic_broadcast.py [--gatec PATH] [--gatec-run PATH] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as oh

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F, B = TP.FLOAT, TP.BOOL
NP = {F: np.float32, B: np.bool_}


def model(nodes, inputs, outputs, consts=None):
    """inputs: (name, elem type, dims with strings for symbolic ones)."""
    g = oh.make_graph(
        nodes, "g",
        [oh.make_tensor_value_info(n, t, d) for n, t, d in inputs],
        [oh.make_tensor_value_info(n, F, None) for n in outputs],
        [onnx.numpy_helper.from_array(v, k) for k, v in (consts or {}).items()])
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])


def N(op, ins, out="y", **attrs):
    return oh.make_node(op, ins, [out], **attrs)


# name -> (model, [sizes of the symbolic dims, one dict per run]).
CASES = {
    # a dynamic dim against a static 5 (the scan models' bug)
    "add_dynamic_vs_static": (
        model([N("Add", ["a", "b"])], [("a", F, [2, "p"]), ("b", F, [2, 5])], ["y"]),
        [{"p": 1}, {"p": 5}]),
    # two unrelated dynamic dims: either side 1, both 1, neither
    "mul_dynamic_vs_dynamic": (
        model([N("Mul", ["a", "b"])], [("a", F, ["n", "p"]), ("b", F, ["n", "q"])], ["y"]),
        [{"n": 3, "p": 1, "q": 5}, {"n": 3, "p": 5, "q": 1},
         {"n": 3, "p": 1, "q": 1}, {"n": 3, "p": 5, "q": 5}]),
    # ranks differ; both dims of b may broadcast
    "sub_rank_differs": (
        model([N("Sub", ["a", "b"])], [("a", F, ["p"]), ("b", F, ["m", "q"])], ["y"]),
        [{"p": 1, "m": 2, "q": 4}, {"p": 4, "m": 1, "q": 1},
         {"p": 4, "m": 3, "q": 4}, {"p": 1, "m": 1, "q": 1}]),
    # three operands, the condition too
    "where_three_way": (
        model([N("Where", ["c", "x", "y0"])],
              [("c", B, ["r", 1]), ("x", F, ["q"]), ("y0", F, [1, "s"])], ["y"]),
        [{"r": 3, "q": 4, "s": 4}, {"r": 3, "q": 1, "s": 4},
         {"r": 3, "q": 4, "s": 1}, {"r": 1, "q": 1, "s": 1}]),
    # a chain: the broadcast output feeds another broadcast
    "chain_max_div": (
        model([N("Max", ["a", "b"], "t"), N("Div", ["t", "c"])],
              [("a", F, ["p", 4]), ("b", F, ["q", 4]), ("c", F, ["r", 1])], ["y"]),
        [{"p": 1, "q": 6, "r": 6}, {"p": 6, "q": 1, "r": 1},
         {"p": 6, "q": 6, "r": 1}, {"p": 1, "q": 1, "r": 6}]),
    # MatMul batch dims
    "matmul_batch": (
        model([N("MatMul", ["a", "b"])], [("a", F, ["p", 3, 4]), ("b", F, ["q", 4, 2])], ["y"]),
        [{"p": 1, "q": 5}, {"p": 5, "q": 1}, {"p": 5, "q": 5}]),
    # Expand of a dynamic dim to a constant shape
    "expand_dynamic": (
        model([N("Expand", ["a", "s"])], [("a", F, ["p"])], ["y"],
              {"s": np.array([3, 4], np.int64)}),
        [{"p": 1}, {"p": 4}]),
    # a gate x * sigmoid(g) (raised to gated.gate) whose gate is headwise
    # ([.., 1]) or elementwise at run time
    "gate_dynamic_last": (
        model([N("Sigmoid", ["g"], "s"), N("Mul", ["x", "s"])],
              [("x", F, [2, 3, 8]), ("g", F, [2, 3, "h"])], ["y"]),
        [{"h": 1}, {"h": 8}]),
}
# Sizes that do not broadcast: the run must fail with gatec's message.
BAD = [("mul_dynamic_vs_dynamic", {"n": 3, "p": 3, "q": 5}),
       ("add_dynamic_vs_static", {"p": 3})]


def feeds_for(m, sizes, rng):
    feeds = {}
    for vi in m.graph.input:
        tt = vi.type.tensor_type
        shape = [sizes[d.dim_param] if d.dim_param else d.dim_value for d in tt.shape.dim]
        if tt.elem_type == B:
            feeds[vi.name] = rng.random(shape) > 0.5
        else:
            feeds[vi.name] = (rng.standard_normal(shape) + 3.0).astype(np.float32)
    return feeds


def run(args, lib, work, tag, feeds, refs=None):
    cmd = [args.gatec_run, lib, "--atol=1e-5", "--rtol=1e-5"]
    for k, v in feeds.items():
        p = os.path.join(work, "%s_%s.npy" % (tag, k))
        np.save(p, v)
        cmd.append("--input=%s=@%s" % (k, p))
    for i, r in enumerate(refs or []):
        p = os.path.join(work, "%s_ref%d.npy" % (tag, i))
        np.save(p, r)
        cmd.append("--expected-output=y=@%s" % p)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--gatec-run", default=os.path.join(ROOT, "build", "bin", "gatec-run"))
    ap.add_argument("--keep")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="gatec-bcast-")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(20261130)
    failures = runs = 0
    libs = {}
    for name, (m, shapes) in CASES.items():
        path, lib = os.path.join(work, name + ".onnx"), os.path.join(work, name + ".so")
        onnx.save(m, path)
        c = subprocess.run([args.gatec, path, "-o", lib], capture_output=True, text=True)
        if c.returncode != 0:
            print("FAIL %-24s compile: %s" % (name, c.stderr.strip()[-300:]))
            failures += 1
            continue
        libs[name] = lib
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        for k, sizes in enumerate(shapes):
            feeds = feeds_for(m, sizes, rng)
            refs = sess.run(None, feeds)
            r = run(args, lib, work, "%s_%d" % (name, k), feeds, refs)
            runs += 1
            errs = re.findall(r"max \|error\| ([0-9.eE+-]+)", r.stdout + r.stderr)
            ok = r.returncode == 0 and errs
            failures += not ok
            print("%s %-24s %-28s out %-12s max |error| %s" % (
                "ok  " if ok else "FAIL", name, sizes, list(refs[0].shape),
                max(errs) if errs else (r.stdout + r.stderr).strip()[-200:]))
    for name, sizes in BAD:
        if name not in libs:
            continue
        r = run(args, libs[name], work, name + "_bad", feeds_for(CASES[name][0], sizes, rng))
        runs += 1
        ok = r.returncode > 0 and "do not broadcast" in r.stdout + r.stderr
        failures += not ok
        print("%s %-24s %-28s rejected: %s" % (
            "ok  " if ok else "FAIL", name, sizes,
            "yes" if ok else "no (rc %d) %s" % (r.returncode, (r.stdout + r.stderr)[-200:])))
    print("dynamic broadcast vs onnxruntime: %d models, %d runs, %d failures"
          % (len(CASES), runs, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
