#!/usr/bin/env bash
# Two or more builds of one Google Benchmark binary, run in turn ROUNDS
# times, with the best and the median time of each benchmark per binary: a
# change's effect on a shared, noisy machine, where one run of each is not
# enough (docs/performance.md). Copy the binary before and after the change:
#   cp build/bin/nnc-bench-onednn /tmp/before   # ... change, rebuild ...
#   bench/binaries-in-turn.sh 'BM_Attention/' 6 /tmp/before build/bin/nnc-bench-onednn
# Environment (ONEDNN_MAX_CPU_ISA=AVX2, ...) passes through.
set -euo pipefail
FILTER=${1:?usage: bench/binaries-in-turn.sh FILTER ROUNDS BINARY...}
ROUNDS=${2:?usage: bench/binaries-in-turn.sh FILTER ROUNDS BINARY...}
shift 2
[ $# -ge 2 ] || { echo "bench/binaries-in-turn.sh: two binaries or more" >&2; exit 1; }
for _ in $(seq "$ROUNDS"); do
  for B in "$@"; do
    "$B" --benchmark_filter="$FILTER" --benchmark_min_time=0.3 2>/dev/null |
      awk -v b="$B" '/real_time/ {print b, $1, $2, $3}'
  done
done | python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    binary, name, time, unit = line.split()
    runs[(name, binary)].append(float(time))
for (name, binary), t in sorted(runs.items()):
    print("%-50s %-36s best %9.1f  median %9.1f" % (name, binary, min(t), statistics.median(t)))
'
