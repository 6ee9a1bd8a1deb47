#!/usr/bin/env bash
# The whole test suite (`npm test`): build, then the GoogleTest suite natively, as WASM under Node
# and under ASan + UBSan, a bounded libFuzzer run, then the node:test suites against the package's
# module (Node, npm pack + Vite, headless Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh

# Runs one ctest tree; prints the parity/arch lines and the summary, the whole log on failure.
run_gtest() {
  local log="$1/ctest.log" rc=0
  ctest --test-dir "$1" --output-on-failure -V >"$log" 2>&1 || rc=$?
  grep -E '\[ (parity|simd) ' "$log" | sed -E 's/^[0-9]+: //' || true
  if [ "$rc" -ne 0 ]; then
    grep -E -A12 'Failure|FAILED' "$log" | head -200
  fi
  grep -E '(^|: )\[  (PASSED|FAILED)  \]|tests passed|tests failed' "$log" | sed -E 's/^[0-9]+: //'
  return "$rc"
}

echo "== gtest, native ($(uname -m))"
run_gtest build/native
echo "== gtest, WebAssembly SIMD under Node"
run_gtest build/wasm
echo "== gtest, native under ASan + UBSan (clang, build/sanitize)"
bash tools/sanitize.sh
echo "== fuzz: weights files and windows (libFuzzer + ASan + UBSan, 30 s per target)"
bash tools/fuzz.sh 30
echo "== node:test"
node --test tests/js/
echo "== package: npm pack -> fresh install; Node, Vite + headless Chromium, tsc"
node --test tests/package/
echo "== browser: the demo page in headless Chromium (simulated wearable, CSP, injected Bluetooth)"
node --test tests/browser/
