#!/usr/bin/env bash
# Writes the machine code nnc-jit generates for every workload kernel into
# OUT_DIR: NAME.o (--emit=obj) and NAME.s (--emit=asm), for the host CPU and
# for AVX2 (--mcpu=haswell), at 2 threads. Two snapshots taken before and
# after a refactoring must be byte-identical:
#   scripts/codegen-snapshot.sh /tmp/before      # on the old commit
#   scripts/codegen-snapshot.sh /tmp/after       # on the new one
#   diff -r /tmp/before /tmp/after && echo identical
# NNC_JIT (default build/bin/nnc-jit) and NNC_WORKLOADS_DIR (default
# test/Workloads/inputs) choose the compiler and the kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/codegen-snapshot.sh OUT_DIR}
JIT=${NNC_JIT:-build/bin/nnc-jit}
DIR=${NNC_WORKLOADS_DIR:-test/Workloads/inputs}
mkdir -p "$OUT"
for W in "$DIR"/*.nnc; do
  N=$(basename "$W" .nnc)
  PARAMS=$(/usr/bin/python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(' '.join('--param %s=%s' % kv for kv in m.get('params', {}).items()))" "$DIR/$N.meta.json")
  for T in host haswell; do
    CPU=()
    [ "$T" = host ] || CPU=(--mcpu="$T")
    # shellcheck disable=SC2086
    "$JIT" "$W" $PARAMS --threads 2 "${CPU[@]}" --emit=obj -o "$OUT/$N.$T.o"
    # shellcheck disable=SC2086
    "$JIT" "$W" $PARAMS --threads 2 "${CPU[@]}" --emit=asm -o "$OUT/$N.$T.s"
  done
done
echo "$(find "$OUT" -type f | wc -l) files in $OUT"
