#!/usr/bin/env bash
# The main job: installs, builds, then compiles an example model description
# into tfm IR and prints it. (Native code generation comes with the Highway
# backend; until then the IR is what tfm-compile produces.)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh >/dev/null
bin="${TFM_BUILD_DIR:-build}/bin"
"$bin/tfm-compile" "${1:-examples/tiny-encoder.json}" --emit=mlir -v
