#!/usr/bin/env bash
# Installs everything gatec needs on a fresh Debian 12 machine, idempotently,
# then configures and builds the project into build/.
#   tools/setup.sh            install + build
#   tools/setup.sh --no-build install only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

debs=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22 libomp-22-dev
      libonnx-dev libprotobuf-dev protobuf-compiler cmake ninja-build ccache
      libclang-rt-22-dev python3-venv zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python: a project-local virtual environment with the pinned references.
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import onnx, onnxruntime, numpy; assert onnx.__version__.startswith('1.23')" 2>/dev/null; then
  echo "== pip install (requirements.txt)"
  .venv/bin/pip install -q -r tools/requirements.txt
fi

[ "${1:-}" = "--no-build" ] && exit 0

echo "== configure + build"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DPython3_EXECUTABLE="$root/.venv/bin/python"
fi
cmake --build build
