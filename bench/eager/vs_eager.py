#!/usr/bin/python3
"""Times nnc-jit on the kernels of test/Workloads/inputs/ that torch_eager.py timed under PyTorch eager
on this machine, and prints per-kernel and per-model speedups (eager ms / nnc-jit ms).
  /usr/bin/python3 bench/eager/vs_eager.py build/bin/nnc-jit build/eager/index.json [--threads 2] [-- extra nnc-jit flags]
Eager per model = sum over its groups (each group weighted by its occurrences)."""
import json, os, re, subprocess, sys, collections
nnc, index = sys.argv[1], sys.argv[2]
threads, runs, extra = "2", "30", []
a = sys.argv[3:]
if "--" in a:
    extra = a[a.index("--") + 1:]; a = a[:a.index("--")]
for i, x in enumerate(a):
    if x == "--threads": threads = a[i + 1]
    if x == "--runs": runs = a[i + 1]
W = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "Workloads", "inputs")
d = json.load(open(index))
per_model = collections.defaultdict(lambda: [0.0, 0.0])
print(f"{'kernel':36s} {'occ':>3s} {'eager ms':>9s} {'nnc-jit ms':>10s} {'speedup':>8s}")
for k in d["kernels"]:
    name, occ, eager = k["name"], k["occurrences"], k.get(f"eager_ms_{threads}t")
    f = os.path.join(W, name + ".nnc")
    if eager is None or not os.path.exists(f):
        continue
    meta = json.load(open(os.path.join(W, name + ".meta.json")))
    params = [x for kv in (meta.get("params") or {}).items() for x in ("--param", f"{kv[0]}={kv[1]}")]
    # size the run to ~0.6 s of calls (nnc-jit --bench has no warm-up of its own: early calls are slow)
    p = subprocess.run([nnc, "--threads", threads, "--bench=20", *params, *extra, f], capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr)
    n = int(runs) if not m else max(int(runs), min(20000, int(600 / max(float(m.group(1)), 1e-3))))
    p = subprocess.run([nnc, "--threads", threads, f"--bench={n}", *params, *extra, f], capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms", p.stdout + p.stderr)
    if not m:
        print(f"{name:36s} FAILED: {(p.stdout + p.stderr)[-200:]}"); continue
    t = float(m.group(1))
    model = name.split("__")[0]
    per_model[model][0] += occ * eager; per_model[model][1] += occ * t
    print(f"{name:36s} {occ:3d} {eager:9.4f} {t:10.4f} {eager / t:7.2f}x")
print()
for model, (e, t) in per_model.items():
    print(f"MODEL {model:30s} eager {e:8.3f} ms   nnc-jit {t:8.3f} ms   speedup {e / t:5.2f}x")
