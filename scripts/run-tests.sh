#!/usr/bin/env bash
# Installs every dependency, builds everything and runs every test (lit,
# GoogleTest). The last line is ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
cd "${TFM_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" 2>&1 | grep -v '^Total Test time'
