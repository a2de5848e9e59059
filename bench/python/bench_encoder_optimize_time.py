#!/usr/bin/python3
"""Time to optimize a 12-layer nn.TransformerEncoder (BERT-base: d=768, 12
heads, FFN 3072, GELU) at batch 1, sequence 128, with a cold kernel cache (a
fresh directory per run), twice (docs/performance.md). --threads sets
torch's threads, which the kernels are compiled for (default 2):

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_encoder_optimize_time.py
"""
import argparse
import tempfile
import time
import warnings

import torch
import nncjit.torch as nt

warnings.simplefilter("ignore")
parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()
torch.set_num_threads(args.threads)
layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True)
m = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False).eval()
x = torch.randn(1, 128, 768)
for i in range(2):
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        fast = nt.optimize(m, [x], cache_dir=d)
        print("12-layer encoder, %d thread(s): optimize %.1f s (cold cache)"
              % (args.threads, time.perf_counter() - t), type(fast).__name__,
              all(r.on_nncjit for r in fast.report))
