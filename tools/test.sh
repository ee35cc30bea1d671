#!/usr/bin/env bash
# Sets up (tools/setup.sh: packages, .venv, build) and runs every test:
# the lit suite (import, dialects, passes, models, fuzz corpus, ONNX backend
# node tests). Exit status 0 only if all pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
cmake --build "$root/build" --target check-gatec
