#!/usr/bin/env python3
"""Prints the spans of a Chrome trace written by nnc-jit --trace, one per
line: 'NAME on thread TID', in the file's order."""
import json
import sys

for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if "dur" in e:
        print("%s on thread %s" % (e["name"], e.get("tid")))
