#!/usr/bin/env bash
# The native GoogleTest suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang), in a
# build folder of its own (build/sanitize; the Release builds are untouched). Any report fails.
# The same build holds the libFuzzer targets that tools/fuzz.sh runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/build-dir.sh
bash tools/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
# SF_WERROR (tools/test.sh: ON): -Werror on the project's own code; see tools/build.sh.
werror=()
[ -n "${SF_WERROR:-}" ] && werror=(-DSF_WERROR="$SF_WERROR")
reset_foreign_build_dir build/sanitize
CXX=clang++ cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug -DSF_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG="-O1" "${werror[@]}" >/dev/null
cmake --build build/sanitize -j"$jobs" --target sensorformer_tests fuzz_model_file fuzz_window fuzz_stream
[ "${1:-}" = "--build-only" ] && exit 0
# halt_on_error: the first report fails the run; detect_leaks: LeakSanitizer checks at exit.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
log=build/sanitize/gtest.log
if ! build/sanitize/sensorformer_tests >"$log" 2>&1; then
  grep -E -B2 -A30 'ERROR: |runtime error|Failure|FAILED' "$log" | head -150
  echo "sanitize: the GoogleTest suite failed under ASan+UBSan (full log: $log)" >&2
  exit 1
fi
grep -E '\[  PASSED  \]' "$log" | sed 's/$/ (ASan+UBSan, clang)/'
