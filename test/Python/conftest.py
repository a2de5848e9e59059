"""pytest configuration of the nncjit Python tests (docs/Testing.md).

ctest runs them with PYTHONPATH set to the build tree's python/ directory
and NNC_JIT and NNC_TORCH_RUN to the tools; run by hand:
    PYTHONPATH=build/python NNC_JIT=build/bin/nnc-jit \\
        /usr/bin/python3 -m pytest -q test/Python
"""
import os
import shutil

import pytest


def _tool(variable, name):
    """The path of a tool: $variable, else name on PATH; skips without it."""
    path = os.environ.get(variable) or shutil.which(name)
    if not path:
        pytest.skip("%s is not set and %s is not on PATH" % (variable, name))
    return path


@pytest.fixture(scope="session")
def nnc_jit():
    return _tool("NNC_JIT", "nnc-jit")


@pytest.fixture(scope="session")
def torch_run():
    return _tool("NNC_TORCH_RUN", "nnc-torch-run")
