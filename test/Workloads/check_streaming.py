#!/usr/bin/env python3
"""Runs every test/Workloads/inputs kernel with --streaming-stores=always.

Usage: check_streaming.py NNC_JIT WORKLOADS_DIR THREADS[,THREADS...]

For each workload: the stores stream-stores makes non-temporal (its remarks)
and the vector stores that carry `!nontemporal` in the optimized LLVM IR;
then check_workload.py --check at each thread count, which compares the JIT
with the interpreter and with PyTorch's reference data. Prints one line per
workload and exits 1 at the first failure.
"""
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    nnc, wdir, threads = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    names = sorted(os.path.basename(p)[:-len(".meta.json")]
                   for p in glob.glob(os.path.join(wdir, "*.meta.json")))
    for name in names:
        meta = json.load(open(os.path.join(wdir, name + ".meta.json")))
        src = os.path.join(wdir, meta.get("nnc", name + ".nnc"))
        params = ["--param=%s=%s" % kv for kv in meta.get("params", {}).items()]
        proc = subprocess.run(
            [nnc, src, "--emit=llvm", "--streaming-stores=always",
             "--remarks=stream-stores"] + params,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True)
        if proc.returncode != 0:
            sys.stdout.write(proc.stderr)
            print("%s: nnc-jit --emit=llvm failed" % name)
            return 1
        streamed = proc.stderr.count("is non-temporal")
        vector = proc.stdout.count("!nontemporal !")
        for t in threads:
            check = subprocess.run(
                [sys.executable, os.path.join(HERE, "check_workload.py"), nnc,
                 wdir, name, "--check", "--streaming-stores=always",
                 "--threads", t],
                stdout=subprocess.PIPE, universal_newlines=True)
            if check.returncode != 0:
                sys.stdout.write(check.stdout)
                print("%s: failed at %s threads" % (name, t))
                return 1
        print("%s: %d streamed stores (%d vector stores non-temporal), ok at "
              "threads %s" % (name, streamed, vector, ",".join(threads)))
    print("streaming: %d workloads ok" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
