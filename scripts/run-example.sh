#!/usr/bin/env bash
# Quick start 1: installs what is needed, builds, and runs nnc-jit on an
# example kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
build/bin/nnc-jit examples/gelu.nnc
