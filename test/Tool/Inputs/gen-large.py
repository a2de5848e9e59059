"""Writes a kernel of N top-level statements of one kind (argv: KIND N) for
the scaling tests of test/Tool/scaling.test: every pass of the pipeline and
the code generator must stay near-linear in the size of a kernel."""
import sys

kind, n = sys.argv[1], int(sys.argv[2])
out = ["kernel big(in x: f32[64], out y: f32[64], s: i64) {"]
if kind == "temporaries":
    # Temporaries nobody reads (elide-zero-fill once took 12 s on 10^5).
    out += ["  Allocate(t%d); // dtype=float, dims=[4ll]" % i for i in range(n)]
    out += ["  y[0ll] = x[0ll];"]
    out += ["  Free(t%d);" % i for i in range(n)]
elif kind == "stores":
    out += ["  y[%dll] = (x[%dll]) + %d.f;" % (i % 64, (i + 1) % 64, i % 7)
            for i in range(n)]
elif kind == "loops":
    # Loop nests the dependence analysis and parallelize look at one by one.
    for i in range(n // 3):
        out += ["  for (int64_t i%d = 0ll; i%d < 64ll; i%d++) {" % (i, i, i),
                "    y[i%d] = (x[i%d]) * %d.f;" % (i, i, i % 5),
                "  }"]
elif kind == "lets":
    out += ["  int64_t v%d = s + %dll;" % (i, i) for i in range(n)]
    out += ["  y[0ll] = float(v%d);" % (n - 1)]
else:
    sys.exit("unknown kind " + kind)
out.append("}")
print("\n".join(out))
