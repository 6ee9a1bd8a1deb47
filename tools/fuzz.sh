#!/usr/bin/env bash
# libFuzzer over the core (fuzz/): weights files (safetensors reader -> model loader -> forward)
# windows (tokenizer -> forward) and streaming sessions (pushes, gaps, watermarks, attention rows)
# for the fixture models, under ASan + UBSan.
#   bash tools/fuzz.sh            what `npm test` runs: first every input in fuzz/regressions/<target>/
#                                 (inputs that once failed), then a fixed number of inputs per target
#                                 from seed 1 and a fresh corpus, so that every machine runs the same
#                                 inputs (a time limit would make the set depend on the machine's speed)
#   bash tools/fuzz.sh 3600       an hour per target, seed from the clock; the corpus in build/fuzz/
#                                 grows across runs (looking for new failures)
# A failure stops the run and leaves its input in build/fuzz/artifacts/; replay it with
#   build/sanitize/<target> build/fuzz/artifacts/<file>
# then fix it, copy the input into fuzz/regressions/<target>/ and add a test of the behaviour
# (tests/cpp/test_limits.cpp, tests/cpp/test_stream_edges.cpp build their cases in code).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-}
bash tools/sanitize.sh --build-only
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p build/fuzz/artifacts
# Inputs per target in the fixed run: about 30 s each on the CI machine under ASan.
declare -A runs=([fuzz_model_file]=25000 [fuzz_window]=60000 [fuzz_stream]=60000)
# -rss_limit_mb / -malloc_limit_mb: an input that makes the core allocate past 2 GB is a bug
# (WebAssembly's heap ends there); -timeout: one input may not take 10 s.
bounds=(-timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=2048)
# The report of a failing run: the sanitizer's or the harness's lines.
failure() { grep -E -A40 'ERROR: |runtime error|deadly signal|does not hold|==[0-9]+==' "$1" | head -80; }
for target in fuzz_model_file fuzz_window fuzz_stream; do
  dict=()
  [ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
  log=build/fuzz/$target.log
  if [ -d "fuzz/regressions/$target" ] && [ -n "$(ls -A "fuzz/regressions/$target")" ]; then
    if ! "build/sanitize/$target" "${bounds[@]}" fuzz/regressions/$target/* >"$log" 2>&1; then
      failure "$log"
      echo "fuzz: $target fails on an input of fuzz/regressions/$target/ (log $log)" >&2
      exit 1
    fi
    echo "fuzz: $target passes its $(ls "fuzz/regressions/$target" | wc -l) regression input(s)"
  fi
  if [ -n "$seconds" ]; then
    corpus=build/fuzz/corpus/$target
    limit=(-max_total_time="$seconds")
  else
    corpus=build/fuzz/fixed/$target
    rm -rf "$corpus"
    limit=(-runs="${runs[$target]}" -seed=1)
  fi
  mkdir -p "$corpus"
  [ "$target" = fuzz_model_file ] && cp -n tests/fixtures/model/*.safetensors "$corpus/" || true
  if ! "build/sanitize/$target" "${dict[@]}" "${limit[@]}" "${bounds[@]}" -print_final_stats=1 \
       -artifact_prefix=build/fuzz/artifacts/ "$corpus" >"$log" 2>&1; then
    failure "$log"
    echo "fuzz: $target found a failing input (build/fuzz/artifacts/, log $log)" >&2
    exit 1
  fi
  n=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)
  echo "fuzz: $target ${seconds:+${seconds} s, }$n inputs, $cov, no failure"
done
