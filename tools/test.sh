#!/usr/bin/env bash
# The whole test suite (`npm test`): build, then the GoogleTest suite natively, as WASM under Node
# and under ASan + UBSan, a bounded libFuzzer run, then the node:test suites against the package's
# module (Node, npm pack + Vite, headless Chromium), and the bench's cross-runtime output checks.
set -euo pipefail
cd "$(dirname "$0")/.."
# A compiler warning in the project's own code fails the suite (CMake option SF_WERROR, read by
# tools/build.sh and tools/sanitize.sh, which tools/fuzz.sh builds through).
export SF_WERROR=ON
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
echo "== fuzz: weights files, windows and stream sessions (libFuzzer + ASan + UBSan: regression inputs, then a fixed set per target)"
bash tools/fuzz.sh
# --no-concurrent-recompilation reaches every test file's process: Node 20 can deadlock at exit
# when a background compile waits for a main-thread GC (nodejs/node#54918), and a test process
# that never exits would hang the whole run (seen once in the CLI, which sets the flag itself).
NODE_TEST="node --no-concurrent-recompilation --test"
echo "== node:test"
$NODE_TEST tests/js/
echo "== package: npm pack -> fresh install; Node, Vite + headless Chromium, tsc"
$NODE_TEST tests/package/
echo "== browser: the demo page in headless Chromium (simulated wearable, CSP, injected Bluetooth)"
$NODE_TEST tests/browser/
# No timing here (numbers depend on the machine): every runtime of `npm run bench` against float64
# torch on the committed cases and the peers against ours at the smallest sizes, a few seconds.
echo "== bench output checks: sensorformer vs float64 torch vs onnxruntime-web vs tfjs (node bench/peers.mjs --check)"
node --no-concurrent-recompilation bench/peers.mjs --check
