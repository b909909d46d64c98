#!/usr/bin/env bash
# The main job: installs, builds, then parses, verifies and prints the tfm IR
# of an example encoder block.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
"${TFM_BUILD_DIR:-build}/bin/tfm-opt" examples/encoder-block.mlir
