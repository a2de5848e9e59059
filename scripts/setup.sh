#!/usr/bin/env bash
# Installs the Debian packages nnc-jit needs. Idempotent: does nothing when all
# of them are already installed. Must run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  cmake g++ ninja-build make python3
  llvm-19-dev llvm-19-tools libomp-19-dev
  libdnnl-dev ocl-icd-opencl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-19 libclang-rt-19-dev
  python3-dev pybind11-dev python3-numpy python3-pytest
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

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
