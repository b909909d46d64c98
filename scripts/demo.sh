#!/usr/bin/env bash
# The main job: installs, builds, compiles an example model to a native
# executable and runs it (random weights and input: no files needed),
# printing its output summary and the bench line.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
build_dir="${TFM_BUILD_DIR:-build}"
model="${1:-examples/tiny-decoder.json}"
exe="$build_dir/demo/$(basename "$model" .json)"
mkdir -p "$build_dir/demo"
"$build_dir/bin/tfm-compile" "$model" -o "$exe" -v
"$exe"
"$exe" --bench 20
