#!/usr/bin/env python3
"""nnc-bridge-fuzz: a differential fuzzer for the PyTorch bridge
(nncjit.torch.optimize; docs/reliability.md, "Bridge fuzzing").

Each seed gives a random small PyTorch model, written as Python source from
a grammar of the ops the bridge supports: convolutions (any groups, stride,
padding, dilation, with or without bias), linear layers and matmuls,
pooling, add/mul/cat/split/reshape/transpose/permute, activations, softmax,
layer and batch norm, masks with -inf (a causal one sliced to the
sequence's length, as GPT's), channel shuffle, squeeze-excite,
attention written out, torch's encoder layer and multi-head attention,
gated units (chunk), slices, where and means over rows, box decoding
(columns and strided slices of the last dimension),
several outputs in tuples with None among them, NCHW and channels-last
inputs, batch 1 and larger. The model is scripted or traced, optimized, and
run on the example inputs and on fresh ones of the same shape; its outputs
are compared with eager PyTorch's within the bridge's tolerance. On torch
2, a model of the FX mode also goes through torch.compile(backend="nncjit",
dynamic=True), called at its example's shapes and at three others (batch
1, 3, 5; sequence 5, 1, 7), which one compile of symbolic sizes serves.

A failure is any exception from the bridge, a crash, any group or op left
to PyTorch (every op of the grammar is one nnc-jit covers) for a reason other
than a limit of torch itself (KNOWN_LIMITS), or any difference. Each
failing model is written to OUT/bridge-fuzz-SEED.py, a standalone
reproducer.

    PYTHONPATH=build/python /usr/bin/python3 fuzz/bridge_fuzz.py \\
        --seed=1000 --count=0 --time=1800 --out=/tmp/bridge-fuzz
"""
import argparse
import atexit
import concurrent.futures
import copy
import multiprocessing
import os
import random
import shutil
import sys
import time
import traceback
import warnings

import torch
import torch.fx

RTOL, ATOL = 1e-4, 1e-5

# Reasons a group is left to PyTorch that are not the bridge's failures:
# limits of torch itself, reported as such (docs/reliability.md). They are
# counted, not failed.
KNOWN_LIMITS = ("torch's NNC crashes lowering", "torch's NNC miscompiles")


# -- the grammar -------------------------------------------------------------
class _Value:
    """A tensor of the forward: its name, and its shape, (N, C, H, W) for
    an image, (N, T, D) for a sequence or (N, F) for a vector."""

    def __init__(self, name, kind, shape):
        self.name, self.kind, self.shape = name, kind, tuple(shape)


class ModelWriter:
    """Writes one random model's source: an nn.Module `Model`, a function
    `inputs()` giving its example inputs, and MODE, "script" or "trace"."""

    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.init, self.body = [], []
        self.values, self.count = [], 0
        self.mode = self.r.choice(["script", "script", "trace", "fx"])

    # names
    def _fresh(self, prefix="v"):
        self.count += 1
        return "%s%d" % (prefix, self.count)

    def _module(self, text):
        name = self._fresh("m")
        self.init.append("self.%s = %s" % (name, text))
        return "self." + name

    def _emit(self, kind, shape, expr):
        v = _Value(self._fresh(), kind, shape)
        self.body.append("%s = %s" % (v.name, expr))
        self.values.append(v)
        return v

    def _pick(self, kind):
        """A value of the kind, most likely a recent one."""
        vs = [v for v in self.values if v.kind == kind]
        if not vs:
            return None
        return vs[-1] if self.r.random() < 0.6 else self.r.choice(vs)

    def _same_shape(self, v):
        vs = [u for u in self.values if u.shape == v.shape and u is not v]
        return self.r.choice(vs) if vs else None

    # image ops
    def conv(self, v):
        n, c, h, w = v.shape
        r = self.r
        divisors = [g for g in range(1, c + 1) if c % g == 0]
        groups = r.choice([1, 1, c, r.choice(divisors)])
        cout = groups * r.choice([1, 2, 3]) if groups > 1 else r.randint(2, 16)
        k = r.choice([1, 3, 3, 5])
        dil = r.choice([1, 1, 2]) if k > 1 else 1
        stride = r.choice([1, 1, 2])
        span = dil * (k - 1)
        pad = r.randint(0, span // 2 + (1 if span else 0))
        ho = (h + 2 * pad - span - 1) // stride + 1
        wo = (w + 2 * pad - span - 1) // stride + 1
        if ho < 1 or wo < 1:
            k, dil, pad, ho, wo = 1, 1, 0, (h - 1) // stride + 1, (w - 1) // stride + 1
        bias = r.random() < 0.7
        m = self._module("nn.Conv2d(%d, %d, %d, stride=%d, padding=%d, dilation=%d, "
                         "groups=%d, bias=%s)" % (c, cout, k, stride, pad, dil, groups, bias))
        return self._emit("img", (n, cout, ho, wo), "%s(%s)" % (m, v.name))

    def batchnorm(self, v):
        c = v.shape[1]
        m = self._module("nn.BatchNorm2d(%d)" % c)
        self.init.append("%s.running_mean.uniform_(-1, 1)" % m)
        self.init.append("%s.running_var.uniform_(0.5, 2)" % m)
        self.init.append("%s.weight.data.uniform_(0.5, 1.5)" % m)
        self.init.append("%s.bias.data.uniform_(-0.5, 0.5)" % m)
        return self._emit("img", v.shape, "%s(%s)" % (m, v.name))

    ACTIVATIONS = ["torch.relu(%s)", "F.relu6(%s)", "F.hardswish(%s)",
                   "F.hardsigmoid(%s)", "torch.sigmoid(%s)", "torch.tanh(%s)",
                   "F.gelu(%s)", "F.silu(%s)", "F.leaky_relu(%s, 0.1)", "F.elu(%s)",
                   "F.hardtanh(%s, -1.0, 2.0)", "%s.clamp(min=-0.5)"]

    def activation(self, v):
        return self._emit(v.kind, v.shape, self.r.choice(self.ACTIVATIONS) % v.name)

    def pool(self, v):
        n, c, h, w = v.shape
        r = self.r
        choice = r.choice(["max", "avg", "adaptive"] if min(h, w) >= 2 else ["adaptive"])
        if choice == "adaptive":
            o = r.choice([1, 1, 2])
            return self._emit("img", (n, c, o, o), "F.adaptive_avg_pool2d(%s, %d)" % (v.name, o))
        k = r.choice([2, 3]) if min(h, w) >= 3 else 2
        pad = r.choice([0, 1]) if k == 3 else 0
        ho, wo = (h + 2 * pad - k) // 2 + 1, (w + 2 * pad - k) // 2 + 1
        fn = "F.max_pool2d" if choice == "max" else "F.avg_pool2d"
        return self._emit("img", (n, c, ho, wo), "%s(%s, %d, 2, %d)" % (fn, v.name, k, pad))

    def binary(self, v):
        u = self._same_shape(v)
        op = self.r.choice(["+", "*", "-"])
        if u is None:
            return self._emit(v.kind, v.shape, "%s %s %s" % (v.name, op, self.r.choice(
                ["0.5", "2.0", "1.5"])))
        return self._emit(v.kind, v.shape, "%s %s %s" % (v.name, op, u.name))

    def cat(self, v):
        n, c, h, w = v.shape
        others = [u for u in self.values if u.kind == "img" and u.shape[0] == n and
                  u.shape[2:] == (h, w)]
        u = self.r.choice(others)
        return self._emit("img", (n, c + u.shape[1], h, w),
                          "torch.cat([%s, %s], 1)" % (v.name, u.name))

    def split(self, v):
        n, c, h, w = v.shape
        if c < 2:
            return self.activation(v)
        a = self.r.randint(1, c - 1)
        name = self._fresh("s")
        self.body.append("%s = torch.split(%s, [%d, %d], 1)" % (name, v.name, a, c - a))
        first = self._emit("img", (n, a, h, w), "%s[0]" % name)
        self._emit("img", (n, c - a, h, w), "%s[1]" % name)
        return first if self.r.random() < 0.5 else self.values[-1]

    def shuffle(self, v):
        n, c, h, w = v.shape
        gs = [g for g in (2, 3, 4) if c % g == 0]
        if not gs:
            return self.activation(v)
        g = self.r.choice(gs)
        return self._emit("img", v.shape,
                          "%s.reshape(%d, %d, %d, %d, %d).transpose(1, 2).reshape(%d, %d, %d, %d)"
                          % (v.name, n, g, c // g, h, w, n, c, h, w))

    def squeeze_excite(self, v):
        n, c, h, w = v.shape
        red = max(1, c // self.r.choice([2, 4]))
        s = "F.adaptive_avg_pool2d(%s, 1)" % v.name
        m1 = self._module("nn.Conv2d(%d, %d, 1)" % (c, red))
        m2 = self._module("nn.Conv2d(%d, %d, 1)" % (red, c))
        gate = self.r.choice(["torch.sigmoid", "F.hardsigmoid"])
        return self._emit("img", v.shape, "%s * %s(%s(torch.relu(%s(%s))))" % (
            v.name, gate, m2, m1, s))

    def channel_norm(self, v):
        """ConvNeXt's layer norm over channels, through NHWC."""
        n, c, h, w = v.shape
        m = self._module("nn.LayerNorm(%d)" % c)
        return self._emit("img", v.shape, "%s(%s.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)"
                          % (m, v.name))

    def transpose_hw(self, v):
        n, c, h, w = v.shape
        return self._emit("img", (n, c, w, h), "%s.transpose(2, 3)" % v.name)

    def img_softmax(self, v):
        dim = self.r.choice([1, -1])
        return self._emit("img", v.shape, "torch.softmax(%s, %d)" % (v.name, dim))

    def masked(self, v):
        """A constant mask of -inf on the last two dims, then a softmax over
        the last: a row may be all -inf (NaN in eager, as here)."""
        n, c, h, w = v.shape
        name = self._fresh("mask")
        density = self.r.choice([0.2, 0.5])
        self.init.append("self.register_buffer('%s', torch.rand(%d, %d) < %s)" % (
            name, h, w, density))
        return self._emit("img", v.shape,
                          "torch.softmax(%s.masked_fill(self.%s, float('-inf')), -1)" % (
                              v.name, name))

    def flatten(self, v):
        n = v.shape[0]
        f = 1
        for s in v.shape[1:]:
            f *= s
        if f > 2048:
            v = self._emit("img", v.shape[:2] + (1, 1),
                           "F.adaptive_avg_pool2d(%s, 1)" % v.name)
            f = v.shape[1]
        return self._emit("vec", (n, f), "torch.flatten(%s, 1)" % v.name)

    # vector and sequence ops
    def linear(self, v):
        f = v.shape[-1]
        out = self.r.choice([4, 8, 16, 24])
        m = self._module("nn.Linear(%d, %d, bias=%s)" % (f, out, self.r.random() < 0.8))
        return self._emit(v.kind, v.shape[:-1] + (out,), "%s(%s)" % (m, v.name))

    def matmul(self, v):
        f = v.shape[-1]
        out = self.r.choice([4, 8, 16])
        name = self._fresh("w")
        self.init.append("self.%s = nn.Parameter(torch.randn(%d, %d) / %d)" % (
            name, f, out, f))
        return self._emit(v.kind, v.shape[:-1] + (out,),
                          "torch.matmul(%s, self.%s)" % (v.name, name))

    def layer_norm(self, v):
        m = self._module("nn.LayerNorm(%d)" % v.shape[-1])
        return self._emit(v.kind, v.shape, "%s(%s)" % (m, v.name))

    def softmax(self, v):
        fn = self.r.choice(["torch.softmax", "torch.log_softmax"])
        return self._emit(v.kind, v.shape, "%s(%s, -1)" % (fn, v.name))

    def attention(self, v):
        """Self-attention of a sequence, with an optional causal -inf mask."""
        n, t, d = v.shape
        q = self.linear(v)
        k = self._emit("seq", q.shape, "%s(%s)" % (self._module("nn.Linear(%d, %d)" % (
            d, q.shape[-1])), v.name))
        scores = self._emit("seq", (n, t, t), "torch.matmul(%s, %s.transpose(1, 2)) * %g" % (
            q.name, k.name, 1 / q.shape[-1] ** 0.5))
        if self.r.random() < 0.6:
            name = self._fresh("causal")
            # A mask of the sequence's length, or (GPT's) one of the longest
            # sequence sliced to the call's length (issue 63: a slice by the
            # size of an activation).
            longest = t if self.r.random() < 0.5 else t + 9
            self.init.append("self.register_buffer('%s', torch.ones(%d, %d).triu(1).bool())"
                             % (name, longest, longest))
            mask = "self.%s" % name if longest == t else \
                "self.%s[:%s.size(1), :%s.size(1)]" % (name, v.name, v.name)
            scores = self._emit("seq", scores.shape, "%s.masked_fill(%s, float('-inf'))"
                                % (scores.name, mask))
        p = self._emit("seq", scores.shape, "torch.softmax(%s, -1)" % scores.name)
        return self._emit("seq", (n, t, d), "torch.matmul(%s, %s)" % (p.name, v.name))

    def boxes(self, v):
        """Box decoding as detection models write it, on the last dimension's
        first four entries: columns (of a vector, rank-1 views of stride f),
        or every step-th entry scaled by a width."""
        f = v.shape[-1]
        if f < 4:
            return self.activation(v)
        x = v.name
        w = "(%s[..., 2] - %s[..., 0])" % (x, x)
        h = "(%s[..., 3] - %s[..., 1])" % (x, x)
        if self.r.random() < 0.5:
            return self._emit(v.kind, v.shape[:-1] + (3,),
                              "torch.stack([%s[..., 0] + 0.5 * %s, %s[..., 1] + 0.5 * %s, "
                              "%s * %s], -1)" % (x, w, x, h, w, h))
        step = self.r.choice([2, 4])
        return self._emit(v.kind, v.shape[:-1] + ((f + step - 1) // step,),
                          "%s[..., 0::%d] * %s.unsqueeze(-1) + %s[..., 0].unsqueeze(-1)"
                          % (x, step, w, x))

    def seq_reshape(self, v):
        n, t, d = v.shape
        if d % 2:
            return self.activation(v)
        return self._emit("seq", v.shape, "%s.reshape(%d, %d, 2, %d).permute(0, 1, 3, 2)"
                                          ".reshape(%d, %d, %d)" % (v.name, n, t, d // 2, n, t, d))

    def _heads(self, d):
        """A head count that divides the width d (torch requires it)."""
        return self.r.choice([h for h in (1, 2, 4) if d % h == 0])

    def encoder_layer(self, v):
        """torch's encoder layer (its fused fast path in eval, which the
        lowering decomposes), post- or pre-norm, ReLU or GELU."""
        n, t, d = v.shape
        m = self._module("nn.TransformerEncoderLayer(%d, %d, %d, dropout=0.0, activation=%r, "
                         "batch_first=True, norm_first=%s)" % (
                             d, self._heads(d), self.r.choice([d, 2 * d]),
                             self.r.choice(["relu", "gelu"]), self.r.random() < 0.5))
        return self._emit("seq", v.shape, "%s(%s)" % (m, v.name))

    def multihead(self, v):
        """nn.MultiheadAttention on a sequence, with its weights or not."""
        n, t, d = v.shape
        m = self._module("nn.MultiheadAttention(%d, %d, batch_first=True)" % (
            d, self._heads(d)))
        need = self.r.random() < 0.3
        return self._emit("seq", v.shape, "%s(%s, %s, %s, need_weights=%s)[0]" % (
            m, v.name, v.name, v.name, need))

    def gate(self, v):
        """A gated unit: the halves of the last dim by chunk, one times the
        sigmoid or GELU of the other, and a linear layer back to the width."""
        d = v.shape[-1]
        if d % 2:
            return self.activation(v)
        halves = self._fresh("h")
        self.body.append("%s = %s.chunk(2, -1)" % (halves, v.name))
        fn = self.r.choice(["torch.sigmoid", "F.gelu", "F.silu"])
        g = self._emit(v.kind, v.shape[:-1] + (d // 2,), "%s[0] * %s(%s[1])" % (
            halves, fn, halves))
        m = self._module("nn.Linear(%d, %d)" % (d // 2, d))
        return self._emit(v.kind, v.shape, "%s(%s)" % (m, g.name))

    def rows(self, v):
        """Slices, a roll, a padding, a where, and a mean over the last dim."""
        choice = self.r.choice(["cat", "roll", "pad", "where", "center", "gelu_tanh"])
        if choice == "cat" and v.shape[1] > 1:
            expr = "torch.cat([%s[:, 1:], %s[:, :1]], 1)" % (v.name, v.name)
        elif choice == "roll":
            # Shifts past the dim's size and negative ones too.
            d = self.r.randrange(1, len(v.shape))
            n = v.shape[d]
            expr = "torch.roll(%s, %d, %d)" % (v.name, self.r.randint(-n, 2 * n), d)
        elif choice == "pad":
            # Padded on the left of the last dim, cropped as much on the right.
            p = self.r.randint(0, v.shape[-1])
            expr = "F.pad(%s, (%d, %d), value=%s)" % (v.name, p, -p,
                                                       self.r.choice(["0.0", "-1.5"]))
        elif choice == "where":
            expr = "torch.where(%s > 0.5, %s, %s * 0.25)" % (v.name, v.name, v.name)
        elif choice == "center":
            expr = "%s - %s.mean(-1, keepdim=True)" % (v.name, v.name)
        else:
            expr = "F.gelu(%s, approximate='tanh')" % v.name
        return self._emit(v.kind, v.shape, expr)

    def power(self, v):
        """pow at the exponents with special forms (sqrt, square, ...):
        their values at -inf, -0.0 and NaN are PyTorch's."""
        e = self.r.choice(["0.5", "2.0", "3.0", "-1.0", "-0.5", "0.0", "1.5"])
        if e.startswith("-"):
            # Away from the pole, smoothly: 1 / x of a product's rounding
            # near 0 puts any two float32 results apart, and so does a
            # branch on the sign of x there.
            return self._emit(v.kind, v.shape, "torch.pow(%s * %s + 0.5, %s)" % (
                v.name, v.name, e))
        return self._emit(v.kind, v.shape, "torch.pow(%s, %s)" % (v.name, e))

    def buffer_update(self, v):
        """A buffer that forward updates in place, and reads: each call
        sees the count of the calls before it."""
        b = self._fresh("calls")
        self.init.append("self.register_buffer(%r, torch.zeros(1))" % b)
        self.body.append("self.%s.add_(1.0)" % b)
        return self._emit(v.kind, v.shape, "%s * (1.0 + 0.125 * self.%s)" % (v.name, b))

    def extras(self):
        """Outputs made of the model's own tensors: a random draw (new at
        each call), a constant's computation (a new tensor at each call in
        eager), the constant itself or a view of it. Returns their
        expressions, and the positions among them of the random ones."""
        r, out, random_ = self.r, [], []
        for _ in range(r.choice([0, 0, 0, 1, 2])):
            c = self._fresh("const")
            choice = r.choice(["rand", "dropout", "computed", "itself", "view"])
            # A draw of 256 elements: two alike are no chance (2^-256).
            shape = (16, 16) if choice in ("rand", "dropout") else r.choice([(4, 6), (3, 5)])
            self.init.append("self.%s = nn.Parameter(torch.randn%s, requires_grad=False)" %
                             (c, shape))
            if choice in ("rand", "dropout"):
                random_.append(len(out))
            out.append({"rand": "torch.rand_like(self.%s)",
                        "dropout": "F.dropout(self.%s, 0.5, True)",
                        "computed": "torch.relu(self.%s) * 2.0",
                        "itself": "self.%s",
                        "view": "self.%s.t()"}[choice] % c)
        return out, random_

    IMG_OPS = [("conv", 6), ("batchnorm", 2), ("activation", 4), ("pool", 2),
               ("binary", 3), ("cat", 1), ("split", 1), ("shuffle", 1),
               ("squeeze_excite", 1), ("channel_norm", 1), ("transpose_hw", 1),
               ("img_softmax", 1), ("masked", 1), ("flatten", 1), ("power", 1),
               ("buffer_update", 1)]
    VEC_OPS = [("linear", 3), ("matmul", 1), ("activation", 2), ("layer_norm", 1),
               ("softmax", 1), ("binary", 1), ("gate", 1), ("rows", 1), ("boxes", 1),
               ("power", 1), ("buffer_update", 1)]
    SEQ_OPS = VEC_OPS + [("attention", 2), ("seq_reshape", 1), ("encoder_layer", 1),
                         ("multihead", 1)]

    def write(self):
        r = self.r
        kind = r.choice(["img", "img", "img", "seq", "vec"])
        n = r.choice([1, 1, 2, 3])
        self.layout = "nchw"
        if kind == "img":
            c, h = r.choice([3, 4, 6, 8, 12, 16]), r.randint(4, 12)
            shape = (n, c, h, r.choice([h, r.randint(4, 12)]))
            self.layout = r.choice(["nchw", "channels_last"])
        elif kind == "seq":
            shape = (n, r.choice([4, 8, 12]), r.choice([8, 16]))
        else:
            shape = (n, r.choice([8, 16, 32]))
        inputs = [_Value("x0", kind, shape)]
        if r.random() < 0.25:
            inputs.append(_Value("x1", kind, shape))
        self.values = list(inputs)
        for _ in range(r.randint(2, 9)):
            v = self._pick(r.choice([k for k in ("img", "seq", "vec")
                                     if self._pick(k) is not None]))
            ops = {"img": self.IMG_OPS, "seq": self.SEQ_OPS, "vec": self.VEC_OPS}[v.kind]
            op = r.choices([o for o, _ in ops], [w for _, w in ops])[0]
            getattr(self, op)(v)
        outs, random_ = self._outputs(inputs)
        return self._source(inputs, outs, random_)

    def _outputs(self, inputs):
        """The return expression, and the positions of random outputs."""
        made = [v for v in self.values if v not in inputs]
        r = self.r
        picks = [made[-1]] + r.sample(made[:-1], min(len(made) - 1, r.choice([0, 0, 1, 2])))
        names = [v.name for v in picks]
        extras, random_ = self.extras()
        random_ = [len(names) + i for i in random_]
        names += extras
        if len(names) == 1 and r.random() < 0.7:
            return names[0], random_
        if self.mode == "script" and r.random() < 0.4:
            at = r.randint(0, len(names))
            names.insert(at, "None")
            random_ = [i + (i >= at) for i in random_]
        return "(%s,)" % ", ".join(names), random_

    def _source(self, inputs, outs, random_):
        shapes = ", ".join("(%s)" % ", ".join(map(str, v.shape)) for v in inputs)
        cl = (".contiguous(memory_format=torch.channels_last)"
              if self.layout == "channels_last" else "")
        lines = [
            "# nnc-bridge-fuzz seed %d (fuzz/bridge_fuzz.py)" % self.seed,
            "import torch",
            "import torch.nn as nn",
            "import torch.nn.functional as F",
            "",
            "MODE = %r" % self.mode,
            "RANDOM = %r  # the outputs drawn anew at each call" % random_,
            "",
            "",
            "class Model(nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
        ] + ["        " + s for s in self.init] + [
            "",
            "    def forward(self, %s):" % ", ".join(v.name for v in inputs),
        ] + ["        " + s for s in self.body] + [
            "        return %s" % outs,
            "",
            "",
            "def inputs(seed=%d):" % self.seed,
            "    g = torch.Generator().manual_seed(seed)",
            "    return [torch.randn(s, generator=g)%s for s in [%s]]" % (cl, shapes),
            "",
            "",
            "def model():",
            "    torch.manual_seed(%d)" % self.seed,
            "    return Model().eval()",
        ]
        return "\n".join(lines) + "\n"


# -- running and comparing ---------------------------------------------------
_MODULES = None


def load(source):
    """The namespace of a model's source, loaded from a file (TorchScript
    reads a module's source through inspect)."""
    import importlib.util
    import tempfile
    global _MODULES
    if _MODULES is None:
        _MODULES = tempfile.mkdtemp(prefix="nnc-bridge-fuzz-")
        atexit.register(shutil.rmtree, _MODULES, True)
    name = "bridge_fuzz_model_%d" % len(os.listdir(_MODULES))
    path = os.path.join(_MODULES, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def _flat(out):
    if out is None or isinstance(out, torch.Tensor):
        return [out]
    return [x for o in out for x in _flat(o)]


def difference(got, want, exact=None, rtol=RTOL):
    """Why got is not want within the bridge's tolerance, or None. Equal
    infinities and NaN in the same positions match. exact() (if given:
    the model in float64) referees where they differ:
    - where eager's float32 result is not the exact one at most positions
      of an output (a layer norm over a row of equal values 1e10 makes
      its rounding the output, times 1/sqrt(eps)), the output has no
      float32 oracle and is not compared;
    - where either result is NaN or infinite, they must be the same,
      unless eager's float32 result is not the exact one there (a NaN or
      an infinity the exact result has not, or a finite value more than a
      tenth off it: an intermediate overflowed, as a sum of squares of
      1e30 does), where eager is no oracle;
    - where both are finite, ours passes if it is within the tolerance of
      float64's, or no farther from it than twice eager's is plus ATOL
      (the model amplifies float32 rounding, as a layer norm over values
      that differ by less than its eps does, or over a row of 1e10 whose
      spread is its rounding).
    Written apart from the bridge's own check (nncjit.torch.check) on
    purpose: the oracle must not share the code it judges."""
    why = _difference(got, want, rtol)
    if not why or exact is None or " outputs, " in why or " is None" in why or \
            "eager's " in why.split(":")[0]:
        return why
    try:
        reference = _flat(exact())
    except Exception:  # noqa: BLE001 - an op without float64: no referee
        return why
    for a, b, r in zip(_flat(got), _flat(want), reference):
        if a is None or _difference(a, b, rtol) is None:
            continue
        faithful = _faithful(b, r, rtol)
        if faithful.double().mean() < 0.5:
            continue  # Rounding decides the output, in eager as in any float32 code.
        finite = torch.isfinite(a) & torch.isfinite(b)
        if _difference(a[~finite & faithful], b[~finite & faithful], rtol) or \
                _difference(a[finite], b[finite], rtol) and \
                not _closer(a[finite], b[finite], r[finite], rtol):
            return why
    return None


def _faithful(want, exact, rtol=RTOL):
    """Where eager's float32 result stands for the exact (float64) one: the
    same NaN, the same infinity, or finite and within a tenth of it
    beyond the tolerance (float32 rounding adds up to less; eager's layer
    norm gives 0 or NaN, by how its sums fall, for a row whose squares
    overflow, and what follows is off by more)."""
    want, exact = want.double(), exact.double()
    fin = torch.isfinite(exact)
    bound = ATOL + rtol * float(exact[fin].abs().max()) if fin.any() else ATOL
    close = torch.isfinite(want) & ((want - exact).abs() <= bound + 0.1 * exact.abs())
    return torch.where(fin, close, torch.isnan(want) & torch.isnan(exact) | (want == exact))


def _closer(got, want, exact, rtol=RTOL):
    """Whether got is within the tolerance of exact, or no farther from it
    than twice want plus ATOL, at exact's finite positions (and equal to
    want at the others)."""
    exact = exact.double()
    fin = torch.isfinite(exact)
    if _difference(got[~fin], want[~fin], rtol) is not None:
        return False
    if not fin.any():
        return True
    off = float((got.double()[fin] - exact[fin]).abs().max())
    return off <= ATOL + rtol * float(exact[fin].abs().max()) or \
        off <= ATOL + 2 * float((want.double()[fin] - exact[fin]).abs().max())


def _difference(got, want, rtol=RTOL):
    got, want = _flat(got), _flat(want)
    if len(got) != len(want):
        return "%d outputs, eager has %d" % (len(got), len(want))
    for i, (a, b) in enumerate(zip(got, want)):
        if a is None or b is None:
            if a is not b:
                return "output %d is %s, eager's is %s" % (i, a, b)
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            return "output %d is %s %s, eager's %s %s" % (i, a.dtype, list(a.shape),
                                                          b.dtype, list(b.shape))
        a, b = a.double(), b.double()
        nan = torch.isnan(b)
        if not torch.equal(torch.isnan(a), nan):
            return "output %d has NaN in other positions than eager's" % i
        inf = torch.isinf(b)
        if not torch.equal(torch.isinf(a), inf) or not torch.equal(a[inf], b[inf]):
            return "output %d has infinities other than eager's" % i
        fin = ~(nan | inf)
        if fin.any():
            diff = float((a[fin] - b[fin]).abs().max())
            bound = ATOL + rtol * float(b[fin].abs().max())
            if diff > bound:
                return "output %d differs by %g (bound %g)" % (i, diff, bound)
    return None


def _in_double(model, args):
    """model's outputs in float64 (a copy of it, and of the inputs)."""
    with torch.no_grad():
        return copy.deepcopy(model).double()(*[a.double() if a.is_floating_point() else a
                                               for a in args])


def special_inputs(xs, seed):
    """xs, each made extreme in one way (in its own layout): scaled to
    1e5..1e30 or to denormals, or with a tenth of its elements ±0, ±inf,
    NaN or the smallest denormal. (Not values near the float range's end
    among ordinary ones: sums of them overflow in one order of summation
    and not in another, in PyTorch's kernels as in nnc-jit's. Not rows of
    one value either: PyTorch's layer norm of such a row is its rounding
    times 1/sqrt(eps), a sign that decides what follows, where nnc-jit's
    is the exact 0; test_backend.py tests such rows against PyTorch.)"""
    r, g = random.Random(seed), torch.Generator().manual_seed(seed)
    specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-45])
    out = []
    for x in xs:
        y = x.clone()
        regime = r.choice(["large", "tiny", "specials"])
        if regime == "large":
            y.mul_(10.0 ** r.choice([5, 10, 15, 30]))
        elif regime == "tiny":
            y.mul_(1e-40)
        else:
            pick = specials[torch.randint(len(specials), x.shape, generator=g)]
            mask = torch.rand(x.shape, generator=g) < 0.1
            y[mask] = pick[mask]
        out.append(y)
    return out


def fx_trace(model):
    """model as a GraphModule, its buffers read (and written) by the graph
    at each call: symbolic_trace's default runs a buffer's in-place update
    once, at trace time, and bakes the result in."""
    tracer = torch.fx.Tracer()
    tracer.proxy_buffer_attributes = True
    return torch.fx.GraphModule(model, tracer.trace(model))


def _compile(ns, model, xs, threads):
    """(the model as the bridge takes it: scripted, traced or FX-traced,
    the bridge's result) or a failure's text."""
    import nncjit.torch as nt
    try:
        # torch warns of its own modules' scripting (TransformerEncoderLayer's
        # batch_first constant): not the bridge's concern.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            given = {"trace": lambda: torch.jit.trace(model, xs),
                     "script": lambda: torch.jit.script(model),
                     "fx": lambda: fx_trace(model)}[ns["MODE"]]()
    except Exception as e:  # noqa: BLE001 - a model PyTorch rejects is the generator's bug
        return "generator: PyTorch cannot %s the model: %s" % (ns["MODE"], e)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if ns["MODE"] == "fx":
                return given, nt.backend(given, xs, threads=threads), caught
            return given, nt.optimize(given, xs, threads=threads), caught
    except Exception:  # noqa: BLE001
        return "%s raised %s" % ("backend" if ns["MODE"] == "fx" else "optimize",
                                 _exception())


def check(source, threads=2, stats=None):
    """Runs one model through the bridge; returns None or what failed.
    stats, a dict, counts the groups and ops that ran on nnc-jit."""
    ns = load(source)
    try:
        model, xs = ns["model"](), ns["inputs"]()
    except Exception as e:  # noqa: BLE001 - a model torch rejects is the generator's bug
        return "generator: PyTorch cannot make the model: %s" % e
    compiled = _compile(ns, model, xs, threads)
    if isinstance(compiled, str):
        return compiled
    given, fast, caught = compiled
    # Eager from here: tracing ran the model (its buffers, which the traced
    # module shares, moved on), and compiling must leave them as they are.
    eager = copy.deepcopy(model)
    # The grammar has no op whose shape or branch depends on the data: the
    # lowering, where optimize chooses it, must take every model.
    refusal = next((str(w.message) for w in caught
                    if str(w.message).startswith("nncjit: the lowering cannot take")), None)
    if refusal:
        return refusal
    if stats is not None:
        if ns["MODE"] == "fx":
            stats["regions"] = stats.get("regions", 0) + sum(1 for r in fast.report
                                                             if r.kernel)
        else:
            stats["groups"] = stats.get("groups", 0) + len(fast.groups)
            stats["ops"] = stats.get("ops", 0) + len(fast.ops)
            stats["merged"] = stats.get("merged", 0) + sum(len(r.merged) for r in fast.report)
    # Fresh inputs of the same shapes run the kernels, and so do inputs
    # with special values and extreme magnitudes; another batch size
    # fails the groups' type checks and runs PyTorch's fallback (where the
    # model takes it: a reshape may name the batch size).
    other = [torch.cat([x, x[:1] * 0.5]) for x in xs]
    try:
        with torch.no_grad():
            copy.deepcopy(eager)(*other)
    except Exception:  # noqa: BLE001 - eager refuses it: nothing to compare
        other = None
    if ns["MODE"] == "fx":
        other = None  # backend's regions take the example's shapes only.
    random_, draws = ns.get("RANDOM", []), []
    for name, args in (("the example inputs", xs),
                       ("fresh inputs", ns["inputs"](ns_seed(ns) + 1)),
                       ("special values", special_inputs(xs, ns_seed(ns) + 2)),
                       ("another batch size", other)):
        if args is None:
            continue
        try:
            # The first refusal's warning (another batch size): the
            # stats say what it would.
            got, refused = _counting_refusals(fast, args)
        except Exception:  # noqa: BLE001
            return "the optimized model raised on %s: %s" % (name, _exception())
        # Inputs of the example's shapes run every kernel of the graph.
        if args is not other and refused:
            return "on %s: kernels refused their inputs %d times (PyTorch's ops " \
                "ran in their place)" % (name, refused)
        before = copy.deepcopy(eager)  # Its buffers as the call finds them.
        with torch.no_grad():
            want = eager(*args)
        got, want = _flat(got), _flat(want)
        draws.append([got[i] for i in random_ if i < len(got)])
        # Special values test what becomes of them, not precision: extreme
        # magnitudes and denormals amplify rounding (1 / x of a layer norm
        # of 1e-40), so finite results are held to ten times the tolerance.
        why = difference([None if i in random_ else t for i, t in enumerate(got)],
                         [None if i in random_ else t for i, t in enumerate(want)],
                         lambda: _in_double(before, args),
                         RTOL * 10 if name == "special values" else RTOL)
        if why:
            return "on %s: %s" % (name, why)
        # A caller may write to what it is given: later calls must not see it.
        with torch.no_grad():
            for t in got + want:
                if t is not None:
                    t.add_(1.0)
    for i, draw in enumerate(zip(*draws)):
        if any(torch.equal(a, b) for a, b in zip(draw, draw[1:])):
            return "random output %d is the same at two calls" % random_[i]
    if ns["MODE"] == "fx" and TORCH2:
        why = check_dynamic(ns, eager, xs)
        if why:
            return why
    # A group or op left to PyTorch; an op kernel refuses an input shape
    # when it first sees it, and keeps its other shapes on nnc-jit.
    # On the lowering, an op it does not cover runs in PyTorch by design.
    refused = [r for r in fast.report if not r.on_nncjit or r.reason]
    known = [r for r in refused if r.uncovered or r.reason.startswith(KNOWN_LIMITS)]
    if stats is not None:
        stats["known limits"] = stats.get("known limits", 0) + len(known)
    refused = [r for r in refused if r not in known]
    if refused:
        return "refused: " + "; ".join("%s: %s" % (" ".join(r.ops[:4]), r.reason)
                                       for r in refused)
    return None


# (batch, sequence) of the calls at other shapes: sizes of 1 and primes.
OTHER_SHAPES = ((1, 5), (3, 1), (5, 7))
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def other_shape(xs, batch, sequence, seed):
    """Inputs like xs (dtypes, layouts) of another batch and, for those of
    rank 3 ([batch, sequence, features]), another sequence length."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for x in xs:
        shape = list(x.shape)
        shape[0] = batch
        if x.dim() == 3:
            shape[1] = sequence
        y = torch.randn(shape, generator=g)
        if x.dim() == 4 and not x.is_contiguous():
            y = y.contiguous(memory_format=torch.channels_last)
        out.append(y)
    return out


def check_dynamic(ns, eager, xs):
    """The model through torch.compile(backend="nncjit", dynamic=True) (its
    kernels of symbolic sizes, issue 63) at the example's shapes and at
    OTHER_SHAPES, each compared with eager where eager takes it (a reshape
    may name a size); None or what failed. No kernel may refuse its inputs:
    Dynamo's graphs say every relation of their sizes."""
    torch._dynamo.reset()
    fast = torch.compile(copy.deepcopy(eager), backend="nncjit", dynamic=True)
    eager = copy.deepcopy(eager)
    random_ = ns.get("RANDOM", [])
    calls = [("the example's shapes", xs)] + [
        ("batch %d, sequence %d" % bs, other_shape(xs, *bs, ns_seed(ns) + 3 + i))
        for i, bs in enumerate(OTHER_SHAPES)]
    for name, args in calls:
        before = copy.deepcopy(eager)
        try:
            with torch.no_grad():
                want = eager(*args)
        except Exception:  # noqa: BLE001 - eager refuses the shape: nothing to compare
            eager = before
            continue
        try:
            got, refused = _counting_refusals(fast, args)
        except Exception:  # noqa: BLE001
            return "torch.compile(dynamic=True) raised at %s: %s" % (name, _exception())
        if refused:
            return "torch.compile(dynamic=True) at %s: kernels refused their inputs " \
                "(PyTorch's ops ran in their place)" % name
        got, want = _flat(got), _flat(want)
        why = difference([None if i in random_ else t for i, t in enumerate(got)],
                         [None if i in random_ else t for i, t in enumerate(want)],
                         lambda: _in_double(before, args))
        if why:
            return "torch.compile(dynamic=True) at %s: %s" % (name, why)
    return None


def _counting_refusals(fast, args):
    """fast(*args) without gradients or warnings, and how many times its
    kernels refused their inputs meanwhile."""
    import nncjit.torch as nt
    refused = nt.stats()["refused"]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fast(*args)
    return got, nt.stats()["refused"] - refused


def _exception():
    """The exception being handled: its one-line form, then its traceback."""
    kind, value = sys.exc_info()[:2]
    return "%s\n%s" % ("".join(traceback.format_exception_only(kind, value)).strip()
                       .split("\n")[-1], traceback.format_exc())


def ns_seed(ns):
    return ns["inputs"].__defaults__[0]


REPRODUCER = '''

if __name__ == "__main__":
    # Standalone reproducer: PYTHONPATH=build/python /usr/bin/python3 THIS_FILE
    import nncjit.torch as nt
    import copy
    import torch.fx
    m, xs = model(), inputs()
    if MODE == "fx":
        tracer = torch.fx.Tracer()
        tracer.proxy_buffer_attributes = True
        fast = nt.backend(torch.fx.GraphModule(m, tracer.trace(m)), xs, threads=2)
    else:
        given = torch.jit.trace(m, xs) if MODE == "trace" else torch.jit.script(m)
        fast = nt.optimize(given, xs, threads=2)
    m = copy.deepcopy(m)
    print(fast.summary())
    with torch.no_grad():
        got, want = fast(*xs), m(*xs)
    got = [got] if not isinstance(got, tuple) else got
    want = [want] if not isinstance(want, tuple) else want
    for a, b in zip(got, want):
        if a is not None:
            print("max abs diff", float((a - b).abs().nan_to_num().max()),
                  "max magnitude", float(b.abs().nan_to_num().max()))
'''


def _worker(source, threads, inject=None):
    """check() in a worker process: what failed, and the counts. inject
    makes the bridge fail, to test the fuzzer itself: "exception" makes
    optimize raise, "crash" ends the process."""
    if inject == "crash":
        os.abort()
    if inject == "exception":
        import nncjit.torch as nt

        def raising(*args, **kwargs):
            raise RuntimeError("injected by --inject=exception")
        nt.optimize = raising
    stats = {}
    return check(source, threads, stats), stats


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    p.add_argument("--count", type=int, default=20,
                   help="models to try; 0: until --time runs out (default 20)")
    p.add_argument("--time", type=float, default=0, help="stop after this many seconds")
    p.add_argument("--out", default="bridge-fuzz-failures",
                   help="where failing models are written as reproducers")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--print", action="store_true", help="print each model's source")
    p.add_argument("--inject", choices=["exception", "crash"],
                   help="make the bridge fail (to test the fuzzer itself)")
    a = p.parse_args(argv)
    if a.count <= 0 and a.time <= 0:
        p.error("--count=0 needs --time")
    start, seed, failures, tried, stats = time.time(), a.seed, 0, 0, {}
    pool = None
    while (a.count <= 0 or tried < a.count) and (a.time <= 0 or time.time() - start < a.time):
        source = ModelWriter(seed).write()
        if a.print:
            print(source)
        # Each model runs in a worker process, replaced every 100 models:
        # TorchScript keeps every class it scripts for the life of the
        # process, and a crash is a failure to report, not the end of the run.
        if pool is None:
            pool = concurrent.futures.ProcessPoolExecutor(
                1, multiprocessing.get_context("spawn"), initializer=torch.set_num_threads,
                initargs=(a.threads,), max_tasks_per_child=100)
        try:
            why, counts = pool.submit(_worker, source, a.threads, a.inject).result()
        except concurrent.futures.process.BrokenProcessPool:
            why, counts, pool = "the process running the model died", {}, None
        for k, v in counts.items():
            stats[k] = stats.get(k, 0) + v
        tried += 1
        if why:
            failures += 1
            os.makedirs(a.out, exist_ok=True)
            path = os.path.join(a.out, "bridge-fuzz-%d.py" % seed)
            with open(path, "w") as f:
                f.write(source + "\n# Found: " + why.replace("\n", "\n# ") + REPRODUCER)
            print("seed %d: FAILED: %s\n  reproducer: %s" % (seed, why.split("\n")[0], path),
                  flush=True)
        seed += 1
    if pool is not None:
        pool.shutdown()
    print("nnc-bridge-fuzz: %d models (seeds %d-%d), %d failed, %.0f s; on nnc-jit: "
          "%d fusion groups, %d convolutions and linear layers (%d merged into groups); "
          "left to PyTorch for a limit of torch: %d" % (
              tried, a.seed, seed - 1, failures, time.time() - start, stats.get("groups", 0),
              stats.get("ops", 0), stats.get("merged", 0), stats.get("known limits", 0)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
