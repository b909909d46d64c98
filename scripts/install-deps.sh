#!/usr/bin/env bash
# Installs everything tfm needs to build and test on Debian 12.
# Idempotent and non-interactive: safe to run on every CI start.
# --bench also installs what bench/run.sh needs: oneDNN, gnuplot, and OpenBLAS
# (libtorch recommends it; without it torch runs on the reference libblas3).
set -euo pipefail

packages=(
  # Build
  cmake ninja-build clang-22 lld llvm-22-dev llvm-22-tools libmlir-22-dev
  mlir-22-tools clang-format
  # libFuzzer and the sanitizer runtimes: the fuzz targets (fuzz/) build by
  # default with clang and run briefly in the test suite
  libclang-rt-22-dev libfuzzer-22-dev
  # Libraries
  libhwy-dev libgtest-dev
  # Test oracle (PyTorch 1.13 runs under /usr/bin/python3)
  python3 python3-numpy python3-torch
)
if [ "${1:-}" = "--bench" ]; then
  packages+=(libdnnl-dev gnuplot-nox libopenblas0-pthread)
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--bench]" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
