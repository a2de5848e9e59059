#!/usr/bin/python3
"""Time to optimize torchvision models at batch 1, 224x224, 2 threads, with
a cold kernel cache (a fresh directory per model) (docs/performance.md):

    PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_optimize_time.py \
        inception_v3,densenet121 [FEATURES]

FEATURES, e.g. -avx512f (with ONEDNN_MAX_CPU_ISA=AVX2): the AVX2 path."""
import sys, time, torch, torchvision, warnings, tempfile
import nncjit.torch as nt
warnings.simplefilter("ignore")
torch.set_num_threads(2)
feats = sys.argv[2] if len(sys.argv) > 2 else None
for arch in sys.argv[1].split(","):
    kw = {"aux_logits": False, "init_weights": False} if arch in ("inception_v3", "googlenet") else {}
    m = getattr(torchvision.models, arch)(**kw).eval()
    x = torch.randn(1, 3, 224, 224)
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        f = nt.optimize(m, [x], cache_dir=d, **({"features": feats} if feats else {}))
        print(arch, "optimize %.1f s (cold cache)" % (time.perf_counter() - t), all(r.on_nncjit for r in f.report))
