#!/usr/bin/env bash
# The standing fuzz campaign (README, "Fuzzing"). Builds build-san/ (ASan +
# UBSan + libFuzzer coverage, tools/sanitize.sh's configuration), then
#  1. libFuzzer: gatec-fuzz-import (the loader, importer and graph phases up
#     to `fused`) for SECONDS over the working corpus build-san/fuzz/corpus,
#     seeded with test/Fuzz/Inputs/{corpus,crashes} and test/models;
#     findings are written to build-san/fuzz/artifacts/;
#  2. the protobuf-aware mutator (test/scripts/make_fuzz_corpus.py
#     --campaign N): N mutants of the committed models, each imported and,
#     where it imports, compiled to a model library by the sanitized gatec
#     (test/scripts/run_fuzz_corpus.py --full), outcomes by class.
#   tools/fuzz.sh [SECONDS [MUTANTS [SEED]]]     default: 3600 2000 1
# A finding to keep becomes a regression input: copy it into
# test/Fuzz/Inputs/crashes/ (run by test/Fuzz/libfuzzer.test).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${1:-3600}
mutants=${2:-2000}
seed=${3:-1}
jobs=${FUZZ_JOBS:-$(nproc)}
tools/sanitize.sh --configure-only
cmake --build build-san --target gatec gatec-fuzz-import
# A process over 4 GiB is a memory finding (RLIMIT_AS does not mix with
# ASan's shadow memory).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:hard_rss_limit_mb=4096:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
w=build-san/fuzz
mkdir -p "$w/corpus" "$w/artifacts"
rm -f "$w"/fuzz-*.log
if [ "$secs" -gt 0 ]; then
  echo "== libFuzzer: $secs s, $jobs jobs"
  ( cd "$w" && "$root/build-san/bin/gatec-fuzz-import" \
      -max_total_time="$secs" -timeout=60 -rss_limit_mb=4096 -max_len=262144 \
      -seed="$seed" -print_final_stats=1 -jobs="$jobs" -workers="$jobs" \
      -artifact_prefix="$root/$w/artifacts/" \
      "$root/$w/corpus" "$root/test/Fuzz/Inputs/corpus" \
      "$root/test/Fuzz/Inputs/crashes" "$root/test/models" ) || true
  # With -jobs each worker logs to fuzz-N.log: sum their executions.
  total=0
  for f in "$w"/fuzz-*.log; do
    [ -f "$f" ] || continue
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$f" | tail -1 | grep -o '[0-9]*$' || true)
    total=$((total + ${n:-0}))
  done
  echo "libFuzzer: $total executions; corpus $(ls "$w/corpus" | wc -l) inputs;" \
       "findings $(ls "$w/artifacts" | wc -l) (in $w/artifacts)"
  grep -h "cov: " "$w"/fuzz-*.log 2>/dev/null | tail -1 || true
fi
if [ "$mutants" -gt 0 ]; then
  echo "== mutator: $mutants mutants through full compiles"
  rm -rf "$w/mutants"
  .venv/bin/python test/scripts/make_fuzz_corpus.py --out "$w/mutants" \
    --campaign "$mutants" --seed "$seed" --gentle 0.85
  .venv/bin/python test/scripts/run_fuzz_corpus.py --gatec build-san/bin/gatec \
    --corpus "$w/mutants" --full --jobs "$jobs" --timeout 300 --mem-limit-mb 0 \
    --progress 200
fi
