#!/usr/bin/env bash
# Builds both configurations: native (build/native) and WebAssembly SIMD (build/wasm, which also
# writes the package's module to web/dist/). Incremental: a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
# Debian's emcc runs its JS optimizer with the machine's Node, which does not look in
# /usr/share/nodejs where Debian installs acorn (without it: "Cannot find module 'acorn'").
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j"$jobs"
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/wasm -j"$jobs"
