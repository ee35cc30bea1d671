#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer: builds
# build-san/ (-DGATEC_SANITIZE=ON: the compiler, its tools and the runtime
# instrumented; UB is fatal) and runs the lit suite there. A periodic run,
# not part of tools/test.sh (it takes about twice as long).
#   tools/sanitize.sh                  the whole suite
#   tools/sanitize.sh test/Import ...  only these lit paths (of the source tree)
#   tools/sanitize.sh --configure-only configure build-san/ and stop
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools/setup.sh --no-build
if [ ! -f build-san/build.ninja ]; then
  cmake -S . -B build-san -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DGATEC_SANITIZE=ON \
    -DCMAKE_C_FLAGS=-gline-tables-only -DCMAKE_CXX_FLAGS=-gline-tables-only \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DPython3_EXECUTABLE="$root/.venv/bin/python"
fi
[ "${1:-}" = "--configure-only" ] && exit 0
# Every finding ends its process with an error (exit 86/87 and a report on
# stderr), so the test that ran it fails. allocator_may_return_null: a huge
# allocation returns NULL as malloc does (the runtime's out-of-memory tests
# need that), not ASan's allocation-size-too-big report.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86:hard_rss_limit_mb=8192:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=87}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/tools/lsan.supp:print_suppressions=0}"
if [ $# -eq 0 ]; then
  cmake --build build-san --target check-gatec
else
  cmake --build build-san --target gatec gatec-opt gatec-run \
    gatec-runtime-test-deps gatec-model-support-test gatec-fuzz-import
  paths=()
  for p in "$@"; do paths+=("build-san/${p#./}"); done
  /usr/lib/llvm-22/bin/lit -sv "${paths[@]}"
fi
