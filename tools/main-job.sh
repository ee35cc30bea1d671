#!/usr/bin/env bash
# Sets up (tools/setup.sh) and runs the main job on a bundled real model:
# the Llama-style block exported by PyTorch with dynamic batch/sequence
# (RMSNorm, GQA attention, RoPE, SwiGLU). gatec compiles it into one shared
# library for this CPU (each phase's IR in build/main-job/NN-<phase>.mlir),
# gatec-run runs it on random inputs at two sequence lengths, and the
# outputs are compared with onnxruntime's on the same inputs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
model="$root/test/models/llama_block_dyn.onnx"
out="$root/build/main-job"
gatec="$root/build/bin/gatec"
rm -rf "$out" && mkdir -p "$out"

echo "== gatec $model -o $out/llama_block.so   (phases dumped to $out)"
"$gatec" "$model" --dump-stages="$out" -o "$out/llama_block.so"
ls -l "$out"

echo
echo "== the gates gatec found (gatec MODEL --report=gates):"
"$gatec" "$model" --report=gates

echo
echo "== the gated phase, as a person reads it (constants left out):"
"$gatec" "$model" --compile-to=gated > "$out/gated-for-a-person.mlir"
grep -E "func.func|gated\.|return" "$out/gated-for-a-person.mlir" | cut -c1-160

echo
echo "== the library's signature (gatec-run --print-signature):"
"$root/build/bin/gatec-run" "$out/llama_block.so" --print-signature

for seq in 5 37; do
  echo
  echo "== run: batch 2, sequence $seq; onnxruntime computes the reference"
  "$root/.venv/bin/python" - "$model" "$out" "$seq" <<'PY'
import sys, numpy as np, onnxruntime as ort
model, out, seq = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = np.random.default_rng(seq).standard_normal((2, seq, 64)).astype(np.float32)
s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
y = s.run(None, {s.get_inputs()[0].name: x})[0]
np.save(f"{out}/x{seq}.npy", x)
np.save(f"{out}/y{seq}_onnxruntime.npy", y)
print("  onnxruntime y[0, 0, :6] =", np.array2string(y[0, 0, :6], precision=5))
PY
  "$root/build/bin/gatec-run" "$out/llama_block.so" --input=@"$out/x$seq.npy" \
    --output=@"$out/y${seq}_gatec.npy" --expected-output=@"$out/y${seq}_onnxruntime.npy" \
    --atol=1e-4 --rtol=1e-4 --benchmark=20
  "$root/.venv/bin/python" -c "import numpy as np; y=np.load('$out/y${seq}_gatec.npy'); print('  gatec       y[0, 0, :6] =', np.array2string(y[0, 0, :6], precision=5))"
done
