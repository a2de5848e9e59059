#!/usr/bin/env bash
# Installs the Debian packages nnc-jit needs, then makes .venv/: Debian's
# python3 with PyPI's torch 2.x, pinned in python/requirements-torch2.txt
# (NNC_TORCH2=0 skips it). Idempotent: does nothing when all of them are
# already installed. Must run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  cmake g++ ninja-build make python3
  llvm-19-dev llvm-19-tools libomp-19-dev
  libdnnl-dev ocl-icd-opencl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-19 libclang-rt-19-dev
  python3-dev pybind11-dev python3-numpy python3-pytest python3-venv
  python3-torch python3-torchvision
  # libtorch's C++ headers and CMake package: the operator library
  # libnncjit_torch and nnc-torch-run (the build goes on without them).
  libtorch-dev
  # PyTorch's BLAS: Debian's libtorch recommends OpenBLAS; with the reference
  # BLAS its linear layers, the baselines of bench/python, are 20x slower.
  libopenblas0-pthread
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -ne 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The torch 2 environment: remade only when the pins change (the stamp holds
# a copy of the requirements it was made from).
if [ "${NNC_TORCH2:-1}" != 0 ]; then
  cd "$(dirname "$0")/.."
  VENV=${NNC_VENV:-.venv}
  REQUIREMENTS=python/requirements-torch2.txt
  if ! cmp -s "$REQUIREMENTS" "$VENV/nncjit-requirements.txt"; then
    echo "setup: making $VENV (torch 2, $REQUIREMENTS)"
    rm -rf "$VENV"
    /usr/bin/python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --no-cache-dir --disable-pip-version-check -r "$REQUIREMENTS"
    cp "$REQUIREMENTS" "$VENV/nncjit-requirements.txt"
  fi
fi
