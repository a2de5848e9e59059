"""Prints the execution grid of generated convolutions (grid.test): one
kernel per case, separated by '// -----', each a channels-last convolution
with a symbolic batch N. The cases cover kernel sizes (square and not),
strides, paddings and dilations (each of H and W apart), sizes of 1, odd and
large, input channels from 1, output channels from 8 (one vector or two,
and a block that is neither), with and without bias, and every post-op."""

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


def view(name, c, h, w):
    return (f"{name}(dtype=float, sizes=[N, {c}ll, {h}ll, {w}ll], "
            f"strides=[{c * h * w}ll, 1ll, {w * c}ll, {c}ll])")


for i, (ic, oc, h, w, kh, kw, s, p, d, *g) in enumerate(CASES):
    groups = g[0] if g else 1
    oh = out_size(h, kh, s[0], p[0], d[0])
    ow = out_size(w, kw, s[1], p[1], d[1])
    post = POST_OPS[i % len(POST_OPS)]
    bias = i % 3 != 1
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
