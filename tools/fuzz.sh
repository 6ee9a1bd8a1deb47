#!/usr/bin/env bash
# libFuzzer over the core (fuzz/): weights files (safetensors reader -> model loader -> forward)
# windows (tokenizer -> forward) and streaming sessions (pushes, gaps, watermarks, attention rows)
# for the fixture models, under ASan + UBSan.
#   bash tools/fuzz.sh            30 s per target (what `npm test` runs)
#   bash tools/fuzz.sh 3600       an hour per target; the corpus in build/fuzz/ grows across runs
# A crash stops the run and leaves its input in build/fuzz/artifacts/; replay it with
#   build/sanitize/<target> build/fuzz/artifacts/<file>
# and make it a regression test (tests/cpp/test_limits.cpp builds its cases in code).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
bash tools/sanitize.sh --build-only
mkdir -p build/fuzz/artifacts build/fuzz/corpus/fuzz_model_file build/fuzz/corpus/fuzz_window build/fuzz/corpus/fuzz_stream
cp -n tests/fixtures/model/*.safetensors build/fuzz/corpus/fuzz_model_file/ 2>/dev/null || true
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for target in fuzz_model_file fuzz_window fuzz_stream; do
  dict=()
  [ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
  log=build/fuzz/$target.log
  # -rss_limit_mb / -malloc_limit_mb: an input that makes the core allocate past 2 GB is a bug
  # (WebAssembly's heap ends there); -timeout: one input may not take 10 s.
  if ! "build/sanitize/$target" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2560 \
       -malloc_limit_mb=2048 -seed=1 -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/ \
       "build/fuzz/corpus/$target" >"$log" 2>&1; then
    grep -E -A40 'ERROR: |runtime error|deadly signal|==[0-9]+==' "$log" | head -80
    echo "fuzz: $target found a failing input (build/fuzz/artifacts/, log $log)" >&2
    exit 1
  fi
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  echo "fuzz: $target ${seconds} s, $runs inputs, $cov, no failure"
done
