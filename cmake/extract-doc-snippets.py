#!/usr/bin/env python3
"""Turns the ```cpp blocks of a Markdown guide into compilable sources.

The first block is a complete program: it is written to EXAMPLE as is. Every
other block is a fragment of statements: each becomes the body of one
GoogleTest test in TESTS. #line directives point compile errors at the
guide's own lines.

usage: extract-doc-snippets.py GUIDE.md EXAMPLE.cpp TESTS.cpp
"""
import os
import sys


def blocks(path):
    """(first line number, text) of each ```cpp block."""
    out, cur, start = [], None, 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if cur is None and line.strip() == "```cpp":
                cur, start = [], n + 1
            elif cur is not None and line.strip() == "```":
                out.append((start, "".join(cur)))
                cur = None
            elif cur is not None:
                cur.append(line)
    if cur is not None:
        sys.exit(f"{path}:{start - 1}: error: unterminated ```cpp block")
    return out


def write_if_changed(path, text):
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    guide, example, tests = sys.argv[1:4]
    found = blocks(guide)
    if len(found) < 2:
        sys.exit(f"{guide}: error: expected a program and fragments")
    src = os.path.abspath(guide)
    (line, program), fragments = found[0], found[1:]
    write_if_changed(example, f'#line {line} "{src}"\n{program}')
    out = ["// Generated from " + guide + " by " + os.path.basename(__file__),
           '#include "nnc/nncjit.h"', "#include <gtest/gtest.h>",
           "#include <cstdio>", "#include <cstdlib>", "#include <string>",
           "#include <vector>", "using namespace nnc;", ""]
    for i, (line, body) in enumerate(fragments):
        out.append(f"TEST(APIDoc, SnippetAtLine{line}) {{")
        out.append(f'#line {line} "{src}"')
        out.append(body + "}")
        out.append("")
    write_if_changed(tests, "\n".join(out))


if __name__ == "__main__":
    main()
