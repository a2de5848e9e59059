#!/usr/bin/env bash
# Quick start 2: installs what is needed, builds, and runs the whole test
# suite (GoogleTest unit tests and the lit suite, through ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR=${NNC_BUILD_DIR:-build}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
