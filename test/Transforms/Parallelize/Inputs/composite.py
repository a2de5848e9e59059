#!/usr/bin/env python3
"""Writes NNC's SimpleParallel{SS,SP,PS,PP} and CompositeParallel tests as one
split-input file: a producer/consumer chain of three 2-deep nests (6 loops)
under all 64 serial/parallel assignments of its loops."""
import itertools

def mark(p):
    return " /* parallel */" if p else ""

out = []
for a, b in itertools.product([0, 1], repeat=2):
    out.append("""kernel simple_%s%s(out y: i32[64, 32]) {
  for (int m = 0; m < 64; m++)%s {
    for (int n = 0; n < 32; n++)%s {
      y[m, n] = m * 100 + n;
    }
  }
}
""" % ("SP"[a], "SP"[b], mark(a), mark(b)))
for bits in itertools.product([0, 1], repeat=6):
    name = "".join("SP"[x] for x in bits)
    out.append("""kernel composite_%s(out t3: f32[40, 60]) {
  Allocate(t1); // dtype=float, dims=[40ll, 60ll]
  Allocate(t2); // dtype=float, dims=[40ll, 60ll]
  for (int64_t m1 = 0ll; m1 < 40ll; m1++)%s {
    for (int64_t n1 = 0ll; n1 < 60ll; n1++)%s {
      t1[m1, n1] = float(m1 + n1);
    }
  }
  for (int64_t m2 = 0ll; m2 < 40ll; m2++)%s {
    for (int64_t n2 = 0ll; n2 < 60ll; n2++)%s {
      t2[m2, n2] = float(m2 * n2) + t1[m2, n2];
    }
  }
  for (int64_t m3 = 0ll; m3 < 40ll; m3++)%s {
    for (int64_t n3 = 0ll; n3 < 60ll; n3++)%s {
      t3[m3, n3] = t1[m3, n3] * t2[m3, n3];
    }
  }
  Free(t2);
  Free(t1);
}
""" % ((name,) + tuple(mark(x) for x in bits)))
print("\n// -----\n".join(out))
