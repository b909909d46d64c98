#!/usr/bin/env bash
# One command for the benchmark: installs what it needs, builds tfm, then runs
# tfm, PyTorch 1.13 and oneDNN on the same workloads and prints the table,
# then gpt2-small's decode-step latency against PyTorch and the bandwidth bound.
#
#   bench/run.sh [--quick] [--threads 1,2] [--only NAME|decode|long|mamba] [--no-decode] [--no-build]
#                [more: bench/bench.py --help; with --only mamba: bench/mamba_bench.py --help]
#
# TFM_BUILD_DIR picks the build folder (default build/), as for scripts/build.sh.
# Results: bench/results/latest.{md,json,png} and decode.{md,json};
# `--only long` (the seq-4096 rows, not in the default run): long-seq.{md,json};
# `--only mamba` runs bench/mamba_bench.py instead (its other flags pass on): mamba.{md,json}.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
only=
help=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    -h|--help) help=1 ;;
    --only=mamba) only=mamba ;;
    --only) if [ "${2:-}" = mamba ]; then only=mamba; shift; else args+=("$1"); fi ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [ "$help" = 1 ]; then
  [ "$only" = mamba ] && exec /usr/bin/python3 bench/mamba_bench.py --help
  exec /usr/bin/python3 bench/bench.py --help
fi

build_dir=${TFM_BUILD_DIR:-build}
if [ "$build" = 1 ]; then
  ./scripts/install-deps.sh --bench
  TFM_BUILD_DIR="$build_dir" ./scripts/build.sh >&2 ||
    { echo "bench: building tfm failed (TFM_BUILD_DIR=$build_dir ./scripts/build.sh)" >&2; exit 1; }
fi
if [ "$only" = mamba ]; then
  exec /usr/bin/python3 bench/mamba_bench.py --tfm-compile "$build_dir/bin/tfm-compile" ${args[@]+"${args[@]}"}
fi
exec /usr/bin/python3 bench/bench.py --tfm-compile "$build_dir/bin/tfm-compile" ${args[@]+"${args[@]}"}
