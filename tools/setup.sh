#!/usr/bin/env bash
# Checks for the Debian packages the build and tests need and installs the missing ones when run
# as root (otherwise prints the exact command to run), then the npm devDependencies if absent.
# Safe to run repeatedly: it does nothing when all is there (a few tenths of a second).
#   bash tools/setup.sh          everything the build and the tests need
#   bash tools/setup.sh --demo   only what `npm start` needs: the WebAssembly build and the server
set -euo pipefail
cd "$(dirname "$0")/.."
demo=0
case "${1:-}" in
  '') ;;
  --demo) demo=1 ;;
  *) echo "usage: bash tools/setup.sh [--demo]" >&2; exit 2 ;;
esac

# package -> a file (or glob) that proves it is installed
declare -A probe=(
  [cmake]=/usr/bin/cmake
  [g++]=/usr/bin/g++
  [make]=/usr/bin/make
  [emscripten]=/usr/bin/emcc
  [libxsimd-dev]=/usr/include/xsimd/xsimd.hpp
  [nlohmann-json3-dev]=/usr/include/nlohmann/json.hpp
  [googletest]=/usr/src/googletest/CMakeLists.txt
  [wabt]=/usr/bin/wasm-objdump
  [nodejs]=/usr/bin/node
  [chromium]=/usr/bin/chromium
  [clang]=/usr/bin/clang++
  [libclang-rt-14-dev]='/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
)
if [ "$demo" -eq 1 ]; then
  # The demo's build is the WebAssembly core alone (tools/build.sh --demo): no g++, GoogleTest,
  # wabt, Chromium or clang.
  for pkg in g++ googletest wabt chromium clang libclang-rt-14-dev; do unset "probe[$pkg]"; done
fi
missing=()
for pkg in "${!probe[@]}"; do
  compgen -G "${probe[$pkg]}" >/dev/null || missing+=("$pkg")
done

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "sensorformer needs Node.js >= 20 (found: $(node --version 2>/dev/null || echo none))." >&2
  exit 1
fi

install_npm_deps() {
  # devDependencies for the tests and the demo server (vite, playwright-core, typescript, send,
  # fast-check), pinned
  # by package-lock.json; playwright drives Debian's chromium, it downloads no browser.
  if [ ! -x node_modules/.bin/vite ] || [ ! -d node_modules/playwright-core ] || [ ! -x node_modules/.bin/tsc ] \
     || [ ! -d node_modules/send ] || [ ! -d node_modules/fast-check ]; then
    npm ci --no-audit --no-fund
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  install_npm_deps
  exit 0
fi
IFS=$'\n' missing=($(sort <<<"${missing[*]}")); unset IFS
if [ "$(id -u)" -eq 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # a mirror hiccup should not fail a fresh machine's first build: three tries
  for try in 1 2 3; do
    if apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; then break; fi
    [ "$try" -eq 3 ] && { echo "setup: apt-get failed three times" >&2; exit 1; }
    sleep 10
  done
  install_npm_deps
else
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "run:   sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
