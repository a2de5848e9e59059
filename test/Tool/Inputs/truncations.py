#!/usr/bin/env python3
"""Feeds every 7th prefix of a file to `nnc-jit --verify-only` and checks that
each run ends with status 0 or 1 (a diagnostic), never a crash or a hang."""
import subprocess
import sys

tool, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
count = 0
for cut in range(0, len(data), 7):
    p = subprocess.run([tool, "--verify-only", "-"], input=data[:cut],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=20)
    if p.returncode not in (0, 1) or (p.returncode == 1 and b"error:" not in p.stderr):
        print("prefix of %d bytes: status %d\n%s" % (cut, p.returncode,
                                                      p.stderr.decode(errors="replace")))
        sys.exit(1)
    count += 1
print("all %d truncations handled" % count)
