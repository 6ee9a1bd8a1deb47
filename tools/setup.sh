#!/usr/bin/env bash
# Checks for the Debian packages the build needs and installs the missing ones when run as root;
# otherwise prints the exact command to run. Safe to run repeatedly: it does nothing when all is there.
set -euo pipefail

# package -> a file that proves it is installed
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
)
missing=()
for pkg in "${!probe[@]}"; do
  [ -e "${probe[$pkg]}" ] || missing+=("$pkg")
done

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "sensorformer needs Node.js >= 20 (found: $(node --version 2>/dev/null || echo none))." >&2
  exit 1
fi

[ ${#missing[@]} -eq 0 ] && exit 0
IFS=$'\n' missing=($(sort <<<"${missing[*]}")); unset IFS
if [ "$(id -u)" -eq 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "run:   sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
