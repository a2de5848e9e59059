"""Writes a kernel of N top-level statements of one kind (argv: KIND N) for
the scaling tests of test/Tool/scaling.test: every pass of the pipeline and
the code generator must stay near-linear in the size of a kernel."""
import sys

kind, n = sys.argv[1], int(sys.argv[2])
out = ["kernel big(in x: f32[64], out y: f32[64], s: i64) {"]
if kind == "temporaries":
    # Temporaries nobody uses (elide-zero-fill once took 12 s on 10^5;
    # code generation took 21 s and 1.8 GB before dead-temporaries removed
    # them).
    out += ["  Allocate(t%d); // dtype=float, dims=[4ll]" % i for i in range(n)]
    out += ["  y[0ll] = x[0ll];"]
    out += ["  Free(t%d);" % i for i in range(n)]
elif kind == "live-temporaries":
    # n/4 temporaries, each written and read (4 statements each): code
    # generation and plan-memory see every one.
    for i in range(n // 4):
        out += ["  Allocate(t%d); // dtype=float, dims=[4ll]" % i,
                "  t%d[%dll] = x[%dll];" % (i, i % 4, i % 64),
                "  y[%dll] = t%d[%dll];" % (i % 64, i, i % 4),
                "  Free(t%d);" % i]
elif kind == "stores":
    out += ["  y[%dll] = (x[%dll]) + %d.f;" % (i % 64, (i + 1) % 64, i % 7)
            for i in range(n)]
elif kind == "loops":
    # Loop nests the dependence analysis and parallelize look at one by one.
    for i in range(n // 3):
        out += ["  for (int64_t i%d = 0ll; i%d < 64ll; i%d++) {" % (i, i, i),
                "    y[i%d] = (x[i%d]) * %d.f;" % (i, i, i % 5),
                "  }"]
elif kind == "convs":
    # Convolutions, each with a relu loop after it (fuse-conv-post-ops looks
    # at every pair): n/10 of them, 3n/10 statements, since each runs.
    out = ["kernel big(in x: f32[1, 2, 2, 2], in w: f32[2, 2, 1, 1], "
           "out y: f32[1, 2, 2, 2]) {"]
    prev = "x"
    for i in range(n // 10):
        out += ["  c%d(dtype=float, sizes=[1ll, 2ll, 2ll, 2ll], strides=[8ll, "
                "4ll, 2ll, 1ll]) = nnc_aten_conv2d(buf_args={%s, w}, "
                "args={1ll, 1ll, 0ll, 0ll, 1ll, 1ll, 1ll})" % (i, prev),
                "  Allocate(d%d); // dtype=float, dims=[1ll, 2ll, 2ll, 2ll]" % i,
                "  for (int64_t i%d = 0ll; i%d < 8ll; i%d++) {" % (i, i, i),
                "    d%d[i%d] = (c%d[i%d])<0.f ? 0.f : (c%d[i%d]);" % ((i,) * 6),
                "  }"]
        prev = "d%d" % i
    out += ["  for (int64_t k = 0ll; k < 8ll; k++) {",
            "    y[k] = %s[k];" % prev, "  }"]
elif kind == "lets":
    out += ["  int64_t v%d = s + %dll;" % (i, i) for i in range(n)]
    out += ["  y[0ll] = float(v%d);" % (n - 1)]
else:
    sys.exit("unknown kind " + kind)
out.append("}")
print("\n".join(out))
