"""What the model benchmarks share: the baseline's environment and the
timing of one variant. Import it before torch."""
import os
import statistics
import sys
import time

# The baseline is PyTorch as its users have it, on OpenBLAS as Debian ships
# it. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some machines set for
# older OpenBLAS builds, slow a current one: the benchmark runs without
# them (OpenBLAS reads them when torch loads it, so the process starts
# again) and says so.
_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

# --avx2-machine: both sides as on a CPU without AVX-512, on one with it:
# oneDNN's kernels, OpenBLAS's (Haswell's, as its dynamic dispatch picks on
# such a CPU) and ATen's vectorized ops at AVX2, and nnc-jit's loops
# compiled without AVX-512 (nnc_features). The ISA paths' figures then
# compare like with like; without it, ONEDNN_MAX_CPU_ISA=AVX2 limits
# nnc-jit alone.
AVX2_MACHINE = {"ONEDNN_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell",
                "ATEN_CPU_CAPABILITY": "avx2"}


def restart_without_openblas_overrides(name):
    """Starts the process again with the baseline's environment: without
    the OpenBLAS overrides, or with AVX2_MACHINE under --avx2-machine."""
    env = {k: v for k, v in os.environ.items() if k not in _OPENBLAS_VARS}
    if "--avx2-machine" in sys.argv:
        env.update(AVX2_MACHINE)
    if env == dict(os.environ):
        return
    dropped = ["%s=%s" % (v, os.environ[v]) for v in _OPENBLAS_VARS
               if v in os.environ and env.get(v) != os.environ[v]]
    if dropped:
        print("%s: running without %s" % (name, ", ".join(dropped)), flush=True)
    if "--avx2-machine" in sys.argv:
        print("%s: as an AVX2 machine: %s" % (name, " ".join(
            "%s=%s" % kv for kv in AVX2_MACHINE.items())), flush=True)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def add_isa_args(ap):
    ap.add_argument("--features", default="",
                    help='nnc-jit CPU feature changes, e.g. "-avx512f" (with '
                         'ONEDNN_MAX_CPU_ISA=AVX2 for oneDNN: nnc-jit\'s AVX2 path)')
    ap.add_argument("--avx2-machine", action="store_true",
                    help="both nnc-jit and PyTorch limited to AVX2 (benchutil.AVX2_MACHINE)")


def nnc_features(args):
    """The CPU feature changes nnc-jit compiles with (add_isa_args)."""
    feats = [f for f in args.features.split(",") if f]
    if args.avx2_machine and "-avx512f" not in feats:
        feats.append("-avx512f")
    return ",".join(feats)


def median_ms(fn, budget_s, min_runs=10):
    ts, start = [], time.perf_counter()
    while len(ts) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def interleaved(variants, rounds, budget_s):
    """The best of `rounds` medians of each variant, the variants taking
    turns in each round (the machine's noise falls on all of them)."""
    for f in variants.values():
        for _ in range(3):
            f()
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, f in variants.items():
            times[k].append(median_ms(f, budget_s))
    return {k: min(v) for k, v in times.items()}


def print_table(columns, row_format, rows, ratio_column, baseline):
    """rows as a Markdown table, and the geometric mean of one column, the
    ratio to baseline."""
    print()
    print("| %s |" % " | ".join(columns))
    print("|%s" % ("---|" * len(columns)))
    for r in rows:
        print(row_format % r)
    print("\ngeometric mean vs %s: %.2fx over %d rows" % (
        baseline, statistics.geometric_mean([r[ratio_column] for r in rows]), len(rows)))


def cpu_name():
    """The CPU the benchmark runs on, as /proc/cpuinfo names it, with its
    family and model and whether it has AVX-512."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
            if not line.strip():
                break
    return "%s (family %s, model %s, %s)" % (
        info.get("model name", "?"), info.get("cpu family", "?"), info.get("model", "?"),
        "AVX-512" if "avx512f" in info.get("flags", "").split() else "no AVX-512")
