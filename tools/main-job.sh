#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the main job on a bundled real model:
# the Llama-style block exported by PyTorch, compiled through every phase
# gatec has so far, with each phase's IR written to build/main-job/.
#
# The phases after `onnx` (gated, fused, linalg, tiled, cpu) and running the
# compiled model against onnxruntime arrive with the issues that build them;
# this script grows with them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
model="$root/test/models/llama_block_dyn.onnx"
out="$root/build/main-job"
rm -rf "$out" && mkdir -p "$out"
echo "== gatec $model --dump-stages=$out"
"$root/build/bin/gatec" "$model" --dump-stages="$out" -o "$out/final.mlir"
ls -l "$out"
echo "== the imported IR, as a person reads it (weights elided):"
"$root/build/bin/gatec" "$model" --compile-to=onnx | grep -v "onnx.Constant" | head -40
echo "..."
echo "== the model as onnxruntime sees it (the reference gatec will be checked against):"
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
