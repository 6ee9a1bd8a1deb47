#!/usr/bin/env bash
# Builds the project's CMake configurations.
#   bash tools/build.sh          native (build/native) and WebAssembly SIMD (build/wasm, which also
#                                writes the package's module to web/dist/), both with the GoogleTest
#                                suite: `npm run build`, and the first step of `npm test`.
#   bash tools/build.sh --demo   only what the demo serves from the build: the WebAssembly core
#                                web/dist/sensorformer-core.{js,wasm} and its threaded twin
#                                web/dist/sensorformer-core-mt.{js,wasm,worker.js} (`npm start`). No native
#                                build, no GoogleTest, no bench. make decides: build/wasm is
#                                configured only when it has no cache yet, and the core is rebuilt
#                                only if a source, header or CMakeLists.txt is newer than it (on a
#                                built tree no compiler runs; about a second). Without a build/wasm,
#                                a web/dist newer than all of src/, bindings/ and CMakeLists.txt
#                                is used as it is.
# Incremental either way: make decides what is stale. A build folder configured for another
# source folder (a copied build/, a moved checkout) is removed and configured afresh.
# SF_WERROR=ON|OFF in the environment sets -Werror on the project's own code (tools/test.sh: ON);
# unset, each build folder keeps the value it was configured with (OFF by default).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/build-dir.sh
source tools/build-dir.sh

demo=0
case "${1:-}" in
  '') ;;
  --demo) demo=1 ;;
  *) echo "usage: bash tools/build.sh [--demo]" >&2; exit 2 ;;
esac

werror=()
[ -n "${SF_WERROR:-}" ] && werror=(-DSF_WERROR="$SF_WERROR")

# Debian's emcc runs its JS optimizer with the machine's Node, which does not look in
# /usr/share/nodejs where Debian installs acorn (without it: "Cannot find module 'acorn'").
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
jobs=$(nproc 2>/dev/null || echo 2)
dist=web/dist/sensorformer-core

if [ "$demo" -eq 1 ]; then
  bash tools/setup.sh --demo
  reset_foreign_build_dir build/wasm
  # Configuring runs emcc's compiler checks (several seconds); an existing cache is reused, and
  # `cmake --build` re-runs the configure step by itself when CMakeLists.txt changed.
  if [ ! -f build/wasm/CMakeCache.txt ]; then
    # No build folder for make to ask (a tree copied without build/, or with a foreign one just
    # removed): a web/dist newer than every input of the core is used as it is, as make would.
    # Like make, this trusts file times; a toolchain upgrade is not seen (`npm run build` after
    # `rm -rf build web/dist` rebuilds from scratch).
    fresh=1
    for f in "$dist.js" "$dist.wasm" "$dist-mt.js" "$dist-mt.wasm" "$dist-mt.worker.js"; do
      if [ ! -f "$f" ] || [ -n "$(find src bindings CMakeLists.txt tools/patch-mt-glue.mjs -newer "$f" -print -quit)" ]; then fresh=0; fi
    done
    if [ "$fresh" -eq 1 ]; then
      echo "build: $dist{,-mt}.{js,wasm} newer than src/, bindings/ and CMakeLists.txt; used as they are"
      exit 0
    fi
    emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release -DSF_BUILD_TESTS=OFF "${werror[@]}" >/dev/null
  fi
  cmake --build build/wasm -j"$jobs" --target sensorformer_wasm sensorformer_wasm_mt | { grep -v 'Built target' || true; }
  echo "build: $dist{,-mt}.{js,wasm} up to date"
  exit 0
fi

bash tools/setup.sh
reset_foreign_build_dir build/native
reset_foreign_build_dir build/wasm
# SF_BUILD_TESTS=ON explicitly: `npm start` may have configured build/wasm without the tests.
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release -DSF_BUILD_TESTS=ON "${werror[@]}" >/dev/null
cmake --build build/native -j"$jobs"
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release -DSF_BUILD_TESTS=ON "${werror[@]}" >/dev/null
cmake --build build/wasm -j"$jobs"
