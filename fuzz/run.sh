#!/usr/bin/env bash
# Runs one fuzz target on its committed seeds:
#   fuzz/run.sh BINARY NAME [libFuzzer flags...]
# e.g. the bounded run of the test suite:
#   fuzz/run.sh build/bin/tfm-fuzz-npy npy -runs=2000 -max_total_time=10 -seed=1
# or a long one (README, "Fuzzing"):
#   nice fuzz/run.sh build/bin/tfm-fuzz-npy npy -max_total_time=1800
#
# Seeds: fuzz/corpus/NAME/ (the corpus) and fuzz/regressions/NAME/ (every
# input that once crashed: replayed on each run). Both are read only; new
# inputs go to $TFM_FUZZ_WORK (default: a fresh temporary folder, removed
# afterwards unless something was found), and so do crash files. Inputs
# found on a long run that add coverage can be merged into the corpus with
#   BINARY -merge=1 fuzz/corpus/NAME $TFM_FUZZ_WORK
# The dictionary fuzz/NAME.dict is used when present.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BINARY NAME [libFuzzer flags...]" >&2
  exit 2
fi
binary=$1
name=$2
shift 2
here="$(cd "$(dirname "$0")" && pwd)"

work=${TFM_FUZZ_WORK:-}
cleanup=0
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/tfm-fuzz-$name.XXXXXX")
  cleanup=1
fi
mkdir -p "$work/corpus" "$work/artifacts"

seeds=("$here/corpus/$name")
[ -d "$here/regressions/$name" ] && seeds+=("$here/regressions/$name")
flags=(-artifact_prefix="$work/artifacts/" -print_final_stats=1)
[ -f "$here/$name.dict" ] && flags+=(-dict="$here/$name.dict")

status=0
"$binary" "${flags[@]}" "$@" "$work/corpus" "${seeds[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "run.sh: $name failed (exit $status); inputs and crash files in $work" >&2
  ls -l "$work/artifacts" >&2 || true
elif [ "$cleanup" -eq 1 ]; then
  rm -rf "$work"
fi
exit "$status"
