#!/usr/bin/env bash
# Configures and builds nnc-jit into build/ (or $NNC_BUILD_DIR). Idempotent:
# a second run with nothing changed does nothing but check.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${NNC_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNC_WERROR=ON "$@"
fi
cmake --build "$BUILD_DIR"
