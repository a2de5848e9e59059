#!/usr/bin/env python3
"""Runs one test/Workloads/inputs kernel through nnc-jit and checks it.

Usage: check_workload.py NNC_JIT WORKLOADS_DIR NAME [extra nnc-jit flags...]

The kernel runs with the scalar params of its .meta.json. Where the meta lists
reference data (PyTorch's own eager results), the reference inputs are passed
with --input and every output is compared with the reference output:
|got - want| <= ATOL + RTOL * |want| with ATOL = RTOL = 1e-4 for f32 (the
tolerance the workloads README recommends; docs/Testing.md). Without reference
data the kernel runs on pseudo-random inputs and must succeed.

Prints 'NAME: ok (...)' on success; on a mismatch prints the buffer, the first
bad index and both values, and exits 1.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

ATOL = 1e-4
RTOL = 1e-4
FORMATS = {"f32": "f", "f64": "d", "i32": "i", "i64": "q", "i8": "b",
           "u8": "B", "bool": "?", "i16": "h"}


def read_array(path, dtype):
    fmt = FORMATS[dtype]
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // struct.calcsize(fmt)
    return struct.unpack("<%d%s" % (n, fmt), data)


def main():
    nnc, wdir, name = sys.argv[1:4]
    extra = sys.argv[4:]
    meta = json.load(open(os.path.join(wdir, name + ".meta.json")))
    cmd = [nnc, os.path.join(wdir, meta.get("nnc", name + ".nnc"))] + extra
    for k, v in meta.get("params", {}).items():
        cmd.append("--param=%s=%s" % (k, v))
    ref = meta.get("reference", {})
    outputs = {}
    tmp = tempfile.mkdtemp(prefix="nnc-wl-")
    if ref.get("available"):
        for buf, info in ref.get("inputs", {}).items():
            cmd.append("--input=%s=%s" % (buf, os.path.join(wdir, info["file"])))
        for buf, info in ref.get("outputs", {}).items():
            path = os.path.join(tmp, buf + ".bin")
            cmd.append("--output=%s=%s" % (buf, path))
            outputs[buf] = (path, os.path.join(wdir, info["file"]), info["dtype"])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        sys.stdout.write(proc.stderr)
        print("%s: nnc-jit failed with status %d" % (name, proc.returncode))
        return 1
    worst = 0.0
    count = 0
    for buf, (got_path, want_path, dtype) in sorted(outputs.items()):
        got = read_array(got_path, dtype)
        want = read_array(want_path, dtype)
        if len(got) != len(want):
            print("%s: output '%s' has %d elements, reference has %d"
                  % (name, buf, len(got), len(want)))
            return 1
        for i, (g, w) in enumerate(zip(got, want)):
            if math.isnan(w) and math.isnan(g):
                continue
            d = abs(g - w)
            if not d <= ATOL + RTOL * abs(w):
                print("%s: output '%s' differs from the reference at index %d:"
                      " got %.9g, want %.9g" % (name, buf, i, g, w))
                return 1
            worst = max(worst, d)
        count += len(got)
    if outputs:
        print("%s: ok (%d reference elements, max abs diff %.3g)"
              % (name, count, worst))
    else:
        print("%s: ok (no reference data; ran on random inputs)" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
