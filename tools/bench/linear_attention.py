#!/usr/bin/env python3
"""Benchmark: decay-gated linear attention on the CPU in three forms, one run.

  chunked    ONNX LinearAttention-27 (gated, one log-decay per head) compiled
             by gatec with the default pipeline (--chunk-linear-attention,
             chunk 16): O(T·C) work and memory per head
  sequential the same model without the fused phase (gatec's recurrent
             form: one scf.for iteration per token)
  onnxruntime the same LinearAttention-27 file in onnxruntime (its CPU
             kernel, >= 1.24), same thread count, in this process
  quadratic  the parallel form (Q Kᵀ ⊙ D) V with D_ij = exp(G_i − G_j)
             (j ≤ i) built from the cumulative log-decays G as onnx ops
             (MatMul, Sub, Trilu, Exp, Mul): O(T²) memory

For each T: the minimum (default; --stat=median for the median) latency of
--runs runs (gatec-run --benchmark, after a warm-up run), peak resident
memory of the gatec-run process (ru_maxrss; includes the inputs and the
runtime), and the ratios chunked/onnxruntime, chunked/sequential and chunked/quadratic
(time; below 1: the chunked form is faster). --rule gated_delta benchmarks
Gated DeltaNet's rule instead (β = sigmoid per head and token, L2-normalised
keys; no quadratic form). On shared cores the minimum is the
steadier statistic. The quadratic form is skipped where its
[H, T, T] intermediates would not fit in the memory available. The outputs
of the three forms are compared at the smallest T (max relative error).
Not part of the tests.

usage: tools/bench/linear_attention.py [--lengths 256,1024,4096,16384]
          [--heads 2] [--dim 64] [--rule gated|gated_delta] [--runs 10]
          [--stat min|median] [--threads 1] [--build build]
  realistic size (issue 17): --heads 16 --dim 128 --lengths 512,2048,8192
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def la_model(path, H, D, rule="gated"):
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info(n, f, [1, "T", H * D]) for n in ("q", "k", "v")]
    ins.append(helper.make_tensor_value_info("g", f, [1, "T", H]))
    names = ["q", "k", "v", "", "g"]
    if rule == "gated_delta":
        ins.append(helper.make_tensor_value_info("beta", f, [1, "T", H]))
        names.append("beta")
    node = helper.make_node("LinearAttention", names, ["o", "s"],
                            q_num_heads=H, kv_num_heads=H, update_rule=rule)
    outs = [helper.make_tensor_value_info("o", f, [1, "T", H * D]),
            helper.make_tensor_value_info("s", f, [1, H, D, D])]
    m = helper.make_model(helper.make_graph([node], "la", ins, outs),
                          opset_imports=[helper.make_opsetid("", 27)])
    onnx.save(m, path)


def quadratic_model(path, H, D):
    """q, k, v [1, H, T, D], G (cumulative log-decay) [1, H, T, 1]."""
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info(n, f, [1, H, "T", D]) for n in ("q", "k", "v")]
    ins.append(helper.make_tensor_value_info("G", f, [1, H, "T", 1]))
    scale = helper.make_tensor("scale", f, [], [1.0 / np.sqrt(D)])
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s"]),
        helper.make_node("Transpose", ["G"], ["Gt"], perm=[0, 1, 3, 2]),
        helper.make_node("Sub", ["G", "Gt"], ["dG"]),          # G_i − G_j
        helper.make_node("Trilu", ["dG"], ["dGl"], upper=0),    # 0 above the diagonal
        helper.make_node("Exp", ["dGl"], ["e"]),                # exponents <= 0
        helper.make_node("Trilu", ["e"], ["Dm"], upper=0),      # causal mask
        helper.make_node("Mul", ["s", "Dm"], ["a"]),
        helper.make_node("MatMul", ["a", "v"], ["o"]),
    ]
    outs = [helper.make_tensor_value_info("o", f, [1, H, "T", D])]
    m = helper.make_model(helper.make_graph(nodes, "quadratic", ins, outs, [scale]),
                          opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)


def run_measured(cmd, env):
    """stdout and peak RSS (MiB) of a child process."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out = p.stdout.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), out[-2000:]))
    return out, ru.ru_maxrss / 1024.0, time.time() - t0


def mem_available_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024.0
    return float("inf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="256,1024,4096,16384")
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--rule", choices=("gated", "gated_delta"), default="gated")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--stat", choices=("min", "median"), default="min")
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP_NUM_THREADS for the libraries (default 1: one core each)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    gatec = os.path.join(a.build, "bin", "gatec")
    gatec_run = os.path.join(a.build, "bin", "gatec-run")
    H, D = a.heads, a.dim
    work = tempfile.mkdtemp(prefix="gatec-bench-la-")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))

    la = os.path.join(work, "la.onnx")
    la_model(la, H, D, a.rule)
    delta = a.rule == "gated_delta"
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(la, so, providers=["CPUExecutionProvider"])
    quad = os.path.join(work, "quadratic.onnx")
    quadratic_model(quad, H, D)
    libs = {"chunked": os.path.join(work, "chunked.so"),
            "sequential": os.path.join(work, "sequential.so"),
            "quadratic": os.path.join(work, "quadratic.so")}
    subprocess.run([gatec, la, "-o", libs["chunked"]], check=True)
    gated_ir = os.path.join(work, "gated.mlir")
    subprocess.run([gatec, la, "--compile-to=gated", "-o", gated_ir], check=True)
    subprocess.run([gatec, gated_ir, "--compile-from=fused", "-o", libs["sequential"]], check=True)
    subprocess.run([gatec, quad, "-o", libs["quadratic"]], check=True)

    rng = np.random.default_rng(0)
    lengths = [int(t) for t in a.lengths.split(",")]
    print("decay-gated linear attention (%s, per-head decay), H=%d, Dk=Dv=%d, B=1, "
          "OMP_NUM_THREADS=%d, %s of %d runs; onnxruntime %s" % (
              a.rule, H, D, a.threads, a.stat, a.runs, ort.__version__))
    print("%6s | %-22s | %-10s | %-22s | %-22s | %s" % (
        "T", "chunked ms / MiB", "ort ms", "sequential ms / MiB", "quadratic ms / MiB",
        "chunk/ort  chunk/seq  chunk/quad (time; memory)"))
    for T in lengths:
        q = rng.standard_normal((1, T, H, D)).astype(np.float32)
        k = rng.standard_normal((1, T, H, D)).astype(np.float32) / np.sqrt(D)
        v = rng.standard_normal((1, T, H, D)).astype(np.float32)
        g = -rng.uniform(1e-3, 0.5, (1, T, H)).astype(np.float32)
        beta = 1 / (1 + np.exp(-rng.standard_normal((1, T, H)))).astype(np.float32)
        if delta:  # Gated DeltaNet normalises its keys
            k = k / np.linalg.norm(k, axis=-1, keepdims=True)
        G = np.cumsum(g.astype(np.float64), axis=1).astype(np.float32)
        files = {}
        for n, x in (("q", q.reshape(1, T, -1)), ("k", k.reshape(1, T, -1)),
                     ("v", v.reshape(1, T, -1)), ("g", g),
                     ("q4", q.transpose(0, 2, 1, 3)), ("k4", k.transpose(0, 2, 1, 3)),
                     ("v4", v.transpose(0, 2, 1, 3)), ("G4", G.transpose(0, 2, 1)[..., None]),
                     ("beta", beta)):
            files[n] = os.path.join(work, "%s.npy" % n)
            np.save(files[n], np.ascontiguousarray(x, dtype=np.float32))
        res, outs = {}, {}
        names = ("q", "k", "v", "g") + (("beta",) if delta else ())
        feeds = {n: np.load(files[n]) for n in names}
        sess.run(None, feeds)
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            o_ort = sess.run(["o"], feeds)[0]
            times.append((time.perf_counter() - t0) * 1e3)
        res["ort"] = float(np.min(times) if a.stat == "min" else np.median(times))
        outs["ort"] = o_ort
        for form in ("chunked", "sequential", "quadratic"):
            if form == "quadratic" and delta:
                res[form] = None
                continue
            if form == "quadratic":
                need = 5 * H * T * T * 4 / 2**20
                if need > 0.7 * mem_available_mib():
                    res[form] = None
                    continue
                args = ["--input=q=@" + files["q4"], "--input=k=@" + files["k4"],
                        "--input=v=@" + files["v4"], "--input=G=@" + files["G4"]]
            else:
                args = ["--input=%s=@%s" % (n, files[n]) for n in names]
            po = os.path.join(work, "out_%s.npy" % form)
            out, rss, _ = run_measured(
                [gatec_run, libs[form]] + args + ["--output=o=@" + po,
                                                  "--benchmark=%d" % a.runs, "--warmup=1"], env)
            m = re.search(r"%s ([0-9.]+) ms" % a.stat, out)
            res[form] = (float(m.group(1)), rss)
            o = np.load(po)
            outs[form] = o if form != "quadratic" else o.transpose(0, 2, 1, 3).reshape(1, T, -1)

        def cell(r):
            return "%10.2f / %8.1f" % r if r else "%22s" % (
                "n/a (delta rule)" if delta else "skipped (memory)")

        c = res["chunked"]
        ratio = "%8.2f  %8.2f  %s" % (c[0] / res["ort"], c[0] / res["sequential"][0],
                               "%7.4f (%5.2f mem)" % (c[0] / res["quadratic"][0], c[1] / res["quadratic"][1])
                               if res["quadratic"] else "   -")
        print("%6d | %s | %10.2f | %s | %s | %s" % (T, cell(c), res["ort"], cell(res["sequential"]),
                                                   cell(res["quadratic"]), ratio))
        if T == lengths[0]:
            ref = outs["ort"]
            for form in ("chunked", "sequential", "quadratic"):
                if form in outs:
                    err = np.max(np.abs(outs[form] - ref)) / np.max(np.abs(ref))
                    print("       (T=%d: %s vs onnxruntime, max error / max |out| = %.1e)"
                          % (T, form, err))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
