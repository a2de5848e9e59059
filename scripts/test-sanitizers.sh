#!/usr/bin/env bash
# Builds nnc-jit with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-asan/ (or $NNC_ASAN_BUILD_DIR) and runs the whole test suite there.
# Idempotent like scripts/build.sh. Assumes scripts/setup.sh has run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${NNC_ASAN_BUILD_DIR:-build-asan}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DNNC_ENABLE_SANITIZERS=ON -DNNC_BUILD_BENCHMARKS=OFF -DNNC_WERROR=ON
fi
cmake --build "$BUILD_DIR"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
