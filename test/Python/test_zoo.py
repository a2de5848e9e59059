"""Every torchvision classification model through nncjit.torch.optimize
(zoo.py): no exception, outputs within 1e-4 of eager's largest magnitude,
every fusion group and convolution or linear layer on nnc-jit, and every
kernel of the graph run on the example's inputs (none refused them for
PyTorch's ops, torch.ops.nncjit.stats()).

CI runs each model of CI_MODELS in one configuration, the configurations
taken in turn, so that each of batch 1 and 8, NCHW and channels-last,
frozen or not, scripted or traced, is met by several models. NNC_ZOO=full
runs every model of zoo.MODELS in every configuration (zoo.py --full does
the same from the command line)."""
import os
import subprocess
import sys

import pytest
import torch

import zoo

# Small ones from each family: the largest take minutes each on 2 cores.
CI_MODELS = ["alexnet", "vgg11_bn", "resnet18", "resnet50", "resnext50_32x4d",
             "wide_resnet50_2", "squeezenet1_1", "densenet121", "inception_v3", "googlenet",
             "shufflenet_v2_x1_0", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
             "mnasnet0_5", "efficientnet_b0", "efficientnet_v2_s", "regnet_x_400mf",
             "regnet_y_400mf", "convnext_tiny", "vit_b_16", "swin_t"]

if os.environ.get("NNC_ZOO") == "full":
    CASES = [(m, c) for m in zoo.MODELS for c in zoo.CONFIGS]
else:
    entries = {m[0]: m for m in zoo.MODELS}
    CASES = [(entries[name], zoo.CONFIGS[i % len(zoo.CONFIGS)])
             for i, name in enumerate(CI_MODELS)]


@pytest.mark.parametrize("model,config", CASES,
                         ids=["%s-%s" % (m[0], zoo.config_name(c)) for m, c in CASES])
def test_model(model, config):
    why, _ = zoo.run(*model, config)
    assert why is None, why


# Through torch.compile(backend="nncjit") (torch 2): a CNN, and the
# transformers whose graphs have the most ops of their own (swin's shifted
# windows, padding and masks; swin v2's cosine attention; maxvit's einsums
# and average pooling). `zoo.py --compile` runs the whole list.
COMPILED = ["resnet18", "mobilenet_v3_small", "vit_b_16", "swin_t", "swin_v2_t", "maxvit_t"]


@pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2, reason="torch.compile is torch 2's")
@pytest.mark.parametrize("name", COMPILED)
def test_compiled(name):
    entries = {m[0]: m for m in zoo.MODELS}
    why, _ = zoo.run_compiled(*entries[name], 1)
    assert why is None, why


def test_the_list_is_every_torchvision_classification_model():
    import torchvision
    listed = torchvision.models.list_models(module=torchvision.models)
    assert sorted(m[0] for m in zoo.MODELS) == sorted(listed)


def test_ci_covers_every_option():
    configs = [c for _, c in CASES]
    for position, values in enumerate([(1, 8), ("nchw", "cl"), (False, True),
                                       ("script", "trace")]):
        for v in values:
            assert sum(c[position] == v for c in configs) >= 4, (position, v)


def test_bench_models_names_an_unknown_model():
    """bench/python/bench_models.py takes zoo.py's names; another is an
    error that names it, before any model is built."""
    import nncjit
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "python",
                          "bench_models.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(nncjit.__file__)), os.path.dirname(__file__)]))
    r = subprocess.run([sys.executable, script, "--models", "resnet18,nosuch"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "error: unknown model nosuch (the names are test/Python/zoo.py's)" in r.stderr
