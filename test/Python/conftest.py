"""pytest configuration of the nncjit Python tests (docs/Testing.md).

ctest runs them with PYTHONPATH set to the build tree's python/ directory
and NNC_JIT to the nnc-jit tool; run by hand:
    PYTHONPATH=build/python NNC_JIT=build/bin/nnc-jit \\
        /usr/bin/python3 -m pytest -q test/Python
"""
import os
import shutil

import pytest


@pytest.fixture(scope="session")
def nnc_jit():
    path = os.environ.get("NNC_JIT") or shutil.which("nnc-jit")
    if not path:
        pytest.skip("NNC_JIT is not set and nnc-jit is not on PATH")
    return path
