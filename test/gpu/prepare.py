#!/usr/bin/env python3
"""Build everything the GPU run needs, on a machine without a GPU.

The GPU machine has no LLVM/MLIR and no gatec; it runs what this script
leaves in --out (default build/gpu-artifacts, a path to `carry`):

  bin/gatec-run, lib/libgatec_runtime.so, lib/libgatec_cuda.so
  e2e/<model>.cuda.so    each committed model (test/models), gatec
                         --target=cuda --gpu-arch=ARCH (cubin + PTX)
  e2e/<model>.cpu.so     the same model for the CPU (the dry run here)
  e2e/<model>.<k>.*.npy  inputs and onnxruntime's outputs, per run k
  e2e/<model>_f16.*, e2e/<model>_bf16.*
                         the fp16/bf16 variants of
                         test/scripts/low_precision.py's models, their
                         reference (onnxruntime fp32 on the same values)
                         rounded to the type, and that script's tolerance;
                         e2e/<model>_<dtype>_mma.*: the same with --gpu-mma
                         (GEMMs on the tensor cores; the CPU library runs
                         the thread mapping with mma.sync emulated)
  e2e/bcast_<case>.*     the run-time broadcast cases (GPU_SCRIPT_CASES) of
                         test/scripts/run_dynamic_broadcast.py, one library
                         each, run at every shape set of the case
  bench/<name>.cuda.so/.cpu.so/.npz
                         the benchmark blocks (bench_modules.BLOCKS),
                         exported here with PyTorch (when this Python has
                         torch; else no benchmark), their CUDA libraries as
                         cubin only (--gpu-format=bin), their weights for the
                         PyTorch peers; the inputs at each --bench-seq are
                         drawn there from a seed. All of it: about 50 MiB,
                         under the 64 MiB a device run can carry
  manifest.json          what to run and with which tolerances

usage: prepare.py [--gatec PATH] [--out DIR] [--arch sm_90]
                  [--models REGEX (matched against <model>.onnx, and
                  <model>_f16.onnx / <model>_bf16.onnx for the variants)]
                  [--no-bench] [--no-broadcast-cases]
                  [--no-low-precision]
                  [--bench-seq 512,2048]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "test", "models")
sys.path.insert(0, os.path.join(ROOT, "test", "scripts"))
import e2e_models  # noqa: E402  (inputs_for: the e2e suite's input draws)
import low_precision  # noqa: E402  (fp16/bf16 variants, tolerances)
# fp32 on the GPU: other summation orders and libdevice's exp/tanh.
FP32_TOL = 2e-4
DYN = {"batch": 2, "seq": 37, "media_seq": 5}


def compile_model(gatec, model, out, extra):
    c = subprocess.run([gatec, model, "-o", out] + extra,
                       capture_output=True, text=True)
    if c.returncode != 0:
        sys.exit("prepare: gatec %s failed:\n%s" % (" ".join([model] + extra),
                                                      c.stderr[-2000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gatec", default=os.path.join(ROOT, "build", "bin", "gatec"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "gpu-artifacts"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--models", default=".*")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--no-broadcast-cases", action="store_true")
    ap.add_argument("--no-low-precision", action="store_true")
    ap.add_argument("--bench-seq", default="512,2048")
    ap.add_argument("--bench-batch", type=int, default=4)
    args = ap.parse_args()
    build = os.path.dirname(os.path.dirname(os.path.abspath(args.gatec)))
    out = args.out
    if os.path.exists(out):
        shutil.rmtree(out)
    for d in ("bin", "lib", "e2e", "bench"):
        os.makedirs(os.path.join(out, d))
    shutil.copy2(os.path.join(build, "bin", "gatec-run"), os.path.join(out, "bin"))
    for lib in ("libgatec_runtime.so", "libgatec_cuda.so"):
        shutil.copy2(os.path.join(build, "lib", lib), os.path.join(out, "lib"))
    cuda = ["--target=cuda", "--gpu-arch=" + args.arch]
    manifest = {"arch": args.arch, "fp32_tol": FP32_TOL, "e2e": [], "bench": []}
    rng = np.random.default_rng(11)
    names = sorted(f[:-5] for f in os.listdir(MODELS)
                   if f.endswith(".onnx") and re.search(args.models, f))
    def add_run(name, lib, model, feeds, low=None, tol=None):
        """One e2e entry: `lib` (e2e/<lib>.cuda.so / .cpu.so) on `feeds`, with
        onnxruntime's outputs as the reference. For a low-precision library
        (low: its dtype), `model` is its fp32 reference model, the feeds are
        in `low` and fed to onnxruntime widened, and the references are
        rounded to `low` (gatec-run compares like dtypes)."""
        e = os.path.join(out, "e2e", name)
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        inputs, outputs = [], []
        for n, v in feeds.items():
            p = low_precision.save_tensor(
                "%s.in_%s" % (e, re.sub(r"\W", "_", n)), v)
            inputs.append((n, os.path.relpath(p, out)))
        wide = {n: (v.astype(np.float32) if low and v.dtype == low_precision.NP[low] else v)
                for n, v in feeds.items()}
        for o, r in zip(sess.get_outputs(), sess.run(None, wide)):
            if low and r.dtype == np.float32:
                r = r.astype(low_precision.NP[low])
            p = low_precision.save_tensor(
                "%s.ref_%s" % (e, re.sub(r"\W", "_", o.name)), r)
            outputs.append((o.name, os.path.relpath(p, out)))
        entry = {"name": name, "cuda": "e2e/%s.cuda.so" % lib,
                 "cpu": "e2e/%s.cpu.so" % lib, "inputs": inputs, "outputs": outputs}
        if tol is not None:
            entry["tol"] = tol
        manifest["e2e"].append(entry)
        print("prepared %s" % name, flush=True)

    for name in names:
        model = os.path.join(MODELS, name + ".onnx")
        e = os.path.join(out, "e2e", name)
        compile_model(args.gatec, model, e + ".cuda.so", cuda)
        compile_model(args.gatec, model, e + ".cpu.so", [])
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        add_run(name, name, model, e2e_models.inputs_for(sess, DYN, rng))

    # fp16 and bf16 (test/scripts/low_precision.py): the variants, their
    # reference models and tolerances.
    if not args.no_low_precision:
        import onnx
        for dtype in ("f16", "bf16"):
            for name in low_precision.DEFAULT_MODELS:
                tag = "%s_%s" % (name, dtype)
                if not re.search(args.models, tag + ".onnx"):
                    continue
                fp32 = onnx.load(os.path.join(MODELS, name + ".onnx"))
                lowm = low_precision.convert(fp32, dtype)
                model = os.path.join(out, "e2e", tag + ".onnx")
                onnx.save(lowm, model)
                compile_model(args.gatec, model, os.path.join(out, "e2e", tag + ".cuda.so"), cuda)
                compile_model(args.gatec, model, os.path.join(out, "e2e", tag + ".cpu.so"), [])
                ref = os.path.join(out, "e2e", tag + ".ref.onnx")
                onnx.save(low_precision.reference_model(fp32, lowm), ref)
                sess = ort.InferenceSession(ref, providers=["CPUExecutionProvider"])
                feeds = low_precision.inputs(sess, DYN, rng, dtype)
                add_run(tag, tag, ref, feeds, low=dtype, tol=low_precision.TOL[dtype])
                # The same with the GEMMs on the tensor cores (--gpu-mma; its
                # CPU library runs the mapping with mma.sync emulated).
                mma = tag + "_mma"
                compile_model(args.gatec, model, os.path.join(out, "e2e", mma + ".cuda.so"),
                              cuda + ["--gpu-mma"])
                compile_model(args.gatec, model, os.path.join(out, "e2e", mma + ".cpu.so"),
                              ["--cpu-thread-mapping", "--gpu-mma"])
                add_run(mma, mma, ref, feeds, low=dtype, tol=low_precision.TOL[dtype])

    # The run-time broadcast of dynamic dims (test/scripts/
    # run_dynamic_broadcast.py): each case's library at every shape set, so
    # the branches that copy a size-1 operand run on the device too.
    if not args.no_broadcast_cases:
        import run_dynamic_broadcast as rdb
        import onnx
        for case in rdb.GPU_SCRIPT_CASES:
            m, shapes = rdb.CASES[case]
            model = os.path.join(out, "e2e", "bcast_%s.onnx" % case)
            onnx.save(m, model)
            lib = "bcast_" + case
            compile_model(args.gatec, model, os.path.join(out, "e2e", lib + ".cuda.so"), cuda)
            compile_model(args.gatec, model, os.path.join(out, "e2e", lib + ".cpu.so"), [])
            for k, sizes in enumerate(shapes):
                add_run("%s_%d" % (lib, k), lib, model, rdb.feeds_for(m, sizes, rng))

    if not args.no_bench:
        try:
            import torch
        except ImportError:
            torch = None
            print("prepare: no torch in this Python: no benchmark models "
                  "(run it with a Python that has torch)")
        if torch is not None:
            import warnings
            sys.path.insert(0, HERE)
            import bench_modules as bm
            seqs = [int(s) for s in args.bench_seq.split(",")]
            for name, spec in bm.BLOCKS.items():
                b = os.path.join(out, "bench", name)
                base = spec.get("same_as")
                if base:  # the same model: only the CUDA library differs
                    src = os.path.join(out, "bench", base)
                    compile_model(args.gatec, src + ".onnx", b + ".cuda.so",
                                  cuda + ["--gpu-format=bin"] + spec.get("gatec_flags", []))
                    manifest["bench"].append(dict(
                        [e for e in manifest["bench"] if e["name"] == base][0],
                        name=name, cuda="bench/%s.cuda.so" % name))
                    print("prepared %s" % name, flush=True)
                    continue
                if spec["export"] is None:
                    bm.gla_onnx(b + ".onnx", args.bench_batch)
                    np.savez(b + ".npz")
                else:
                    m = bm.build(name)
                    # bf16 as its bits (numpy has no bf16): run_gpu.py views
                    # the int16 arrays of keys ending in BF16_BITS as bf16
                    np.savez(b + ".npz", **{
                        (k + bm.BF16_BITS if v.dtype == torch.bfloat16 else k):
                        (v.view(torch.int16) if v.dtype == torch.bfloat16 else v).numpy()
                        for k, v in m.state_dict().items()})
                    ins = bm.draw_inputs(name, 2, 8, 0)
                    # The axes of batch and sequence: where the sizes 11 and 13 land.
                    axes = {n: {shape(11, 13).index(11): "batch",
                                shape(11, 13).index(13): "seq"}
                            for n, shape, _ in spec["inputs"]}
                    y = m(*(torch.from_numpy(a) for a in ins.values()))
                    axes["y"] = {0: "batch", (2 if y.dim() == 4 else 1): "seq"}
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        torch.onnx.export(m, tuple(torch.from_numpy(a) for a in ins.values()),
                                          b + ".onnx", dynamo=False, opset_version=17,
                                          input_names=list(ins), output_names=["y"],
                                          dynamic_axes=axes)
                # cubin only (not also PTX): the weights are in the kernels'
                # modules, and the libraries travel to the GPU machine
                compile_model(args.gatec, b + ".onnx", b + ".cuda.so",
                              cuda + ["--gpu-format=bin"] + spec.get("gatec_flags", []))
                compile_model(args.gatec, b + ".onnx", b + ".cpu.so", [])
                # Inputs are drawn on the GPU machine from these seeds (numpy's
                # PCG64 is the same everywhere), not carried.
                xs = [(t, 100 + t) for t in seqs]
                manifest["bench"].append({"name": name, "cuda": "bench/%s.cuda.so" % name,
                                          "cpu": "bench/%s.cpu.so" % name,
                                          "weights": "bench/%s.npz" % name,
                                          "batch": args.bench_batch, "inputs": xs})
                print("prepared %s" % name, flush=True)
            # The models themselves stay here: the GPU machine runs libraries.
            for f in os.listdir(os.path.join(out, "bench")):
                if f.endswith(".onnx"):
                    os.remove(os.path.join(out, "bench", f))
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    size = sum(os.path.getsize(os.path.join(dp, fn))
               for dp, _, fns in os.walk(out) for fn in fns)
    print("prepare: %d e2e runs, %d benchmark blocks in %s (%.1f MiB)"
          % (len(manifest["e2e"]), len(manifest["bench"]), out, size / 2**20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
