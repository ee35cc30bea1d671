#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the main job on a bundled real model:
# the Llama-style block exported by PyTorch with dynamic batch/sequence
# (RMSNorm, GQA attention, RoPE, SwiGLU), compiled through every phase gatec
# has so far; each phase's IR goes to build/main-job/NN-<phase>.mlir.
#
# Phases after `gated` (fused, linalg, tiled, cpu) and running the compiled
# model against onnxruntime arrive with the issues that build them; this
# script grows with them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
model="$root/test/models/llama_block_dyn.onnx"
out="$root/build/main-job"
gatec="$root/build/bin/gatec"
rm -rf "$out" && mkdir -p "$out"

echo "== gatec $model --dump-stages=$out"
"$gatec" "$model" --dump-stages="$out" -o "$out/final.mlir"
ls -l "$out"

echo
echo "== the gates gatec found (gatec MODEL --report=gates):"
"$gatec" "$model" --report=gates

echo
echo "== the gated phase, as a person reads it (constants left out):"
"$gatec" "$model" --compile-to=gated > "$out/gated-for-a-person.mlir"
grep -E "func.func|gated\.|return" "$out/gated-for-a-person.mlir" | cut -c1-160

echo
echo "== the model as onnxruntime runs it (the reference gatec's CPU backend will be checked against):"
"$root/.venv/bin/python" - "$model" <<'PY'
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
for i in s.get_inputs():
    print("  input ", i.name, i.shape, i.type)
for o in s.get_outputs():
    print("  output", o.name, o.shape, o.type)
x = np.random.default_rng(0).standard_normal((1, 5, 64)).astype(np.float32)
y = s.run(None, {s.get_inputs()[0].name: x})[0]
print("  onnxruntime y[0, :2, :4] =", np.array2string(y[0, :2, :4], precision=4))
PY
