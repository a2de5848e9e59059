#!/usr/bin/python3
"""Transformer forward passes: PyTorch eager, torch.jit.optimize_for_inference
(ofi) of the frozen module, and nncjit.torch.backend (nnc-jit's own
lowering) on the module's graph, measured in one process, interleaved round
by round (docs/performance.md, "Transformers").

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_transformers.py \\
        --threads 2 --rounds 3
    ... bench_transformers.py --cases bert-b1-s128,vit_b_16
    ... bench_transformers.py --via optimize   # nncjit.torch.optimize(module)
    ... bench_transformers.py --avx2-machine   # both sides at AVX2 (benchutil)

Cases: bert-bB-sS, a BERT-base-like nn.TransformerEncoder (2 layers, d=768,
12 heads, FFN 3072, GELU; torch's fused encoder layers, which the backend
writes out) at batch B and sequence S; gpt-bB-sS, a GPT-style decoder (2
blocks written with plain matmul and softmax, a -inf causal mask); vit_b_16
and swin_t (torchvision, batch 1, 224x224); mlp (2 linear layers with GELU,
layer norm and softmax); fx:MODEL, a torchvision CNN's symbolic trace
(fx:resnet18). The backend gets the module's ATen graph
(make_fx), as torch.compile's backends get theirs, or its symbolic trace
(mlp). With --via optimize, nncjit.torch.optimize gets the module itself,
as a user of TorchScript models calls it (it traces the frozen script into
ATen ops for the same lowering).
"""
import argparse
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import (add_isa_args, interleaved, nnc_features, print_table,  # noqa: E402
                       restart_without_openblas_overrides)

restart_without_openblas_overrides("bench_transformers")

import torch  # noqa: E402
import torch.fx  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import nncjit.torch as nt  # noqa: E402

F = torch.nn.functional


class DecoderBlock(torch.nn.Module):
    """Pre-norm GPT block: causal self-attention written out, then the MLP."""

    def __init__(self, d, heads, batch, n):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.shape = (batch, n, heads, d // heads)

    def forward(self, x, mask):
        b, n, h, e = self.shape
        q, k, v = self.qkv(self.ln1(x)).split(h * e, dim=-1)
        q, k, v = (t.reshape(b, n, h, e).transpose(1, 2) for t in (q, k, v))
        a = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(e) + mask, -1)
        x = x + self.proj(torch.matmul(a, v).transpose(1, 2).reshape(b, n, h * e))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Decoder(torch.nn.Module):
    def __init__(self, d, heads, batch, n, layers=2):
        super().__init__()
        self.blocks = torch.nn.ModuleList(DecoderBlock(d, heads, batch, n) for _ in range(layers))

    def forward(self, x, mask):
        for b in self.blocks:
            x = b(x, mask)
        return x


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.ln, self.l2 = torch.nn.Linear(768, 3072), torch.nn.LayerNorm(3072), \
            torch.nn.Linear(3072, 1000)

    def forward(self, x):
        return torch.softmax(self.l2(self.ln(F.gelu(self.l1(x)))), -1)


def make(case):
    """(module, inputs, the graph the backend gets)."""
    if case.startswith(("bert", "gpt")):
        kind, b, s = case.split("-")
        batch, n = int(b[1:]), int(s[1:])
        x = torch.randn(batch, n, 768)
        if kind == "bert":
            layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu",
                                                     batch_first=True)
            m = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
            return m, [x], lambda: make_fx(m)(x)
        m = Decoder(768, 12, batch, n).eval()
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        return m, [x, mask], lambda: make_fx(m)(x, mask)
    if case == "mlp":
        m, x = MLP().eval(), torch.randn(64, 768)
        return m, [x], lambda: torch.fx.symbolic_trace(m)
    import torchvision
    if case.startswith("fx:"):
        # A torchvision model's symbolic trace (torch-level ops, no in-place
        # ones: make_fx keeps CNNs' relu_ and add_).
        m, x = getattr(torchvision.models, case[3:])().eval(), torch.randn(1, 3, 224, 224)
        return m, [x], lambda: torch.fx.symbolic_trace(m)
    m = getattr(torchvision.models, case)().eval()
    if case.startswith("vit"):
        # torchvision zeroes ViT's head: its logits would all be 0.
        torch.nn.init.normal_(m.heads.head.weight, std=0.02)
    x = torch.randn(1, 3, 224, 224)
    return m, [x], lambda: make_fx(m)(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds per measurement")
    ap.add_argument("--cases", default="bert-b1-s128,bert-b8-s128,bert-b1-s512,bert-b8-s512,"
                    "gpt-b1-s128,gpt-b1-s512,vit_b_16,swin_t,mlp")
    add_isa_args(ap)
    ap.add_argument("--via", choices=["backend", "optimize"], default="backend",
                    help="nncjit.torch.backend on the graph, or optimize on the module")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    rows = []
    for case in args.cases.split(","):
        torch.manual_seed(0)
        m, xs, graph = make(case)
        with torch.no_grad():
            ofi = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(m, xs)))
            start = time.perf_counter()
            if args.via == "optimize":
                fast = nt.optimize(m, xs, threads=args.threads, features=nnc_features(args))
            else:
                fast = nt.backend(graph(), xs, threads=args.threads, features=nnc_features(args))
            optimize_s = time.perf_counter() - start
            want = m(*xs)
            err = float((fast(*xs) - want).abs().max() / want.abs().max())
            best = interleaved({"eager": lambda: m(*xs), "ofi": lambda: ofi(*xs),
                                "nncjit": lambda: fast(*xs)}, args.rounds, args.budget)
        regions = [r for r in fast.report if r.kernel]
        on = "%d/%d regions, %d ops left" % (sum(r.on_nncjit for r in regions), len(regions),
                                             len(fast.report) - len(regions))
        row = (case, best["eager"], best["ofi"], best["nncjit"], best["ofi"] / best["nncjit"],
               err, on, optimize_s)
        rows.append(row)
        print("%-14s eager %8.2f  ofi %8.2f  nncjit %8.2f ms  %.2fx ofi  rel err %.1e  %s  "
              "optimize %.1f s" % row, flush=True)
    print_table(["case", "eager ms", "ofi ms", "nncjit ms", "vs ofi", "max rel error",
                 "on nnc-jit", "optimize s"],
                "| %s | %.2f | %.2f | %.2f | %.2fx | %.1e | %s | %.1f |", rows, 4, "ofi")


if __name__ == "__main__":
    main()
