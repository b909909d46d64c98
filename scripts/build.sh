#!/usr/bin/env bash
# Configures (once) and builds tfm into ${TFM_BUILD_DIR:-build}: clang++-22,
# the shared libMLIR.so and lld, the fastest link setup on this machine.
# TFM_SANITIZE=1 (or a list such as address,undefined) makes a sanitizer
# build: ASan + UBSan on every target and on the models tfm-compile builds
# (README, "Sanitizers"); give it its own TFM_BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TFM_BUILD_DIR:-build}
sanitize=${TFM_SANITIZE:-}
[ "$sanitize" = 1 ] && sanitize=address,undefined

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld -DTFM_SANITIZE="$sanitize"
elif [ -n "${TFM_SANITIZE+set}" ] &&
  ! grep -qx "TFM_SANITIZE:STRING=$sanitize" "$build_dir/CMakeCache.txt"; then
  # Asked for another sanitizer setting than the folder was built with.
  cmake -S . -B "$build_dir" -DTFM_SANITIZE="$sanitize"
fi
ninja -C "$build_dir"
