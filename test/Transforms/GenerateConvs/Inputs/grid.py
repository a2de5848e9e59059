"""Prints the execution grid of generated convolutions (grid.test): one
kernel per case, separated by '// -----', each a channels-last convolution
with a symbolic batch N. The cases cover kernel sizes (square and not),
strides, paddings and dilations (each of H and W apart), sizes of 1, odd and
large, input channels from 1, output channels from 8 (one vector or two,
and a block that is neither), with and without bias, and every post-op.

With --random COUNT [--seed S] it prints COUNT random cases instead, of the
same kinds (a fuzzer's input: docs/Testing.md):
  grid.py --random 200 --seed 1 > /tmp/r.nnc
  nnc-jit --conv=generated --check --split-input-file --param N=2 /tmp/r.nnc"""
import argparse
import random

POST_OPS = ["", "relu", "leaky_relu(0.1f)", "clamp(-0.5f, 0.5f)", "sigmoid",
            "tanh", "gelu_erf", "gelu_tanh", "silu", "hardswish", "add", "add, relu"]

# (IC, OC, H, W, KH, KW, stride, pad, dilation[, groups]), H and W pairs as
# (h, w); depthwise cases (groups = channels) last.
CASES = [
    (16, 16, 56, 56, 3, 3, (1, 1), (1, 1), (1, 1)),
    (3, 64, 35, 33, 7, 7, (2, 2), (3, 3), (1, 1)),
    (1, 8, 1, 1, 1, 1, (1, 1), (0, 0), (1, 1)),
    (5, 8, 1, 1, 3, 3, (1, 1), (1, 1), (1, 1)),
    (8, 24, 7, 7, 3, 3, (1, 1), (1, 1), (1, 1)),
    (35, 40, 13, 11, 3, 3, (2, 2), (1, 1), (1, 1)),
    (16, 32, 13, 13, 1, 1, (2, 2), (0, 0), (1, 1)),
    (16, 48, 9, 17, 3, 1, (1, 1), (1, 0), (1, 1)),
    (16, 16, 9, 17, 1, 5, (1, 2), (0, 2), (1, 1)),
    (12, 16, 15, 15, 3, 3, (1, 1), (2, 2), (2, 2)),
    (12, 16, 15, 14, 3, 3, (2, 1), (0, 3), (1, 3)),
    (7, 8, 30, 31, 5, 5, (1, 1), (2, 2), (1, 1)),
    (64, 128, 28, 28, 3, 3, (1, 1), (1, 1), (1, 1)),
    (32, 72, 20, 20, 1, 1, (1, 1), (0, 0), (1, 1)),
    (8, 16, 6, 6, 2, 2, (2, 2), (0, 0), (1, 1)),
    (9, 8, 5, 40, 3, 3, (1, 1), (0, 0), (1, 1)),
    (32, 32, 56, 56, 3, 3, (1, 1), (1, 1), (1, 1), 32),
    (144, 144, 28, 28, 3, 3, (2, 2), (1, 1), (1, 1), 144),
    (24, 24, 9, 13, 5, 5, (1, 1), (2, 2), (1, 1), 24),
    (8, 8, 1, 1, 3, 3, (1, 1), (1, 1), (1, 1), 8),
    (40, 40, 15, 15, 3, 3, (1, 2), (2, 1), (2, 1), 40),
]


def out_size(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def random_case(rng):
    """A valid random case: sizes from 1, kernels up to 5x5, strides and
    dilations up to 3, paddings up to 3, and a depthwise one in four."""
    while True:
        h, w = rng.randint(1, 40), rng.randint(1, 40)
        kh, kw = rng.randint(1, 5), rng.randint(1, 5)
        s = (rng.randint(1, 3), rng.randint(1, 3))
        p = (rng.randint(0, 3), rng.randint(0, 3))
        d = (rng.randint(1, 3), rng.randint(1, 3))
        if (h + 2 * p[0] < d[0] * (kh - 1) + 1 or
                w + 2 * p[1] < d[1] * (kw - 1) + 1):
            continue
        if rng.random() < 0.25:
            c = 8 * rng.randint(1, 9)
            return (c, c, h, w, kh, kw, s, p, d, c)
        return (rng.randint(1, 40), 8 * rng.randint(1, 9), h, w, kh, kw, s,
                p, d)


parser = argparse.ArgumentParser()
parser.add_argument("--random", type=int, default=0)
parser.add_argument("--seed", type=int, default=1)
opts = parser.parse_args()
if opts.random:
    rng = random.Random(opts.seed)
    CASES = [random_case(rng) for _ in range(opts.random)]


def view(name, c, h, w):
    return (f"{name}(dtype=float, sizes=[N, {c}ll, {h}ll, {w}ll], "
            f"strides=[{c * h * w}ll, 1ll, {w * c}ll, {c}ll])")


for i, (ic, oc, h, w, kh, kw, s, p, d, *g) in enumerate(CASES):
    groups = g[0] if g else 1
    oh = out_size(h, kh, s[0], p[0], d[0])
    ow = out_size(w, kw, s[1], p[1], d[1])
    post = POST_OPS[(rng.randrange(len(POST_OPS)) if opts.random else i)
                    % len(POST_OPS)]
    bias = (rng.random() < 0.5) if opts.random else i % 3 != 1
    ins = [f"in x: f32[N, {ic}, {h}, {w}] channels_last",
           f"in w: f32[{oc}, {ic // groups}, {kh}, {kw}]"]
    bufs = ["x", "w"]
    if bias:
        ins.append(f"in b: f32[{oc}]")
        bufs.append("b")
    posts = []
    for op in filter(None, (o.strip() for o in post.split(","))):
        if op == "add":
            ins.append(f"in r: f32[N, {oc}, {oh}, {ow}] channels_last")
            posts.append(f"add({view('r', oc, oh, ow)})")
        else:
            posts.append(op)
    args = ", ".join(f"{v}ll" for v in (s[0], s[1], p[0], p[1], d[0], d[1], groups))
    post_text = f", post_ops={{{', '.join(posts)}}}" if posts else ""
    if i:
        print("// -----")
    print(f"// case {i}: {ic}->{oc} {h}x{w}, kernel {kh}x{kw}, stride {s}, "
          f"pad {p}, dilation {d}, groups {groups}, bias {bias}, "
          f"post-ops {post or 'none'}")
    print(f"kernel case{i}({', '.join(ins)}, "
          f"out y: f32[N, {oc}, {oh}, {ow}] channels_last, N: i64) {{")
    print(f"  {view('y', oc, oh, ow)} = nnc_aten_conv2d(buf_args={{"
          f"{', '.join(bufs)}}}, args={{{args}}}{post_text})")
    print("}")
