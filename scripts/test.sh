#!/usr/bin/env bash
# Quick start 2: installs what is needed, builds, and runs the whole test
# suite (GoogleTest unit tests, the lit suite and the Python tests on
# Debian's torch 1.13, through ctest), then the Python tests on torch 2:
# the package installed into .venv by `pip install --no-build-isolation .`
# (its build kept in build-pip/, so that a second run rebuilds nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR=${NNC_BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
if [ "${NNC_TORCH2:-1}" != 0 ]; then
  ROOT=$PWD
  VENV=$(realpath "${NNC_VENV:-.venv}")
  "$VENV/bin/pip" install -q --no-cache-dir --disable-pip-version-check --no-build-isolation .
  # From outside the checkout, so that the installed package is imported;
  # its tools (nnc-jit, nnc-torch-run) come first on PATH.
  mkdir -p "$BUILD_DIR/test-torch2"
  (cd "$BUILD_DIR/test-torch2" && PATH="$VENV/bin:$PATH" NNCJIT_CACHE_DIR="$PWD/cache" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/test/Python")
fi
