#!/usr/bin/env bash
# Configures (once) and builds tfm into ${TFM_BUILD_DIR:-build}: clang++-22,
# the shared libMLIR.so and lld, the fastest link setup on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TFM_BUILD_DIR:-build}

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld
fi
ninja -C "$build_dir"
