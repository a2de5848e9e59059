"""nnc-torch-run's input fuzzer (fuzz/torch_run_fuzz.py) in CI: its oracle,
on stand-ins for the tool that misbehave, and a bounded run (issue 62)."""
import os
import stat
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fuzz"))
import torch_run_fuzz  # noqa: E402

import nncjit.torch as nt  # noqa: E402

pytestmark = pytest.mark.skipif(
    nt.operator_library() is None,
    reason="nnc-jit's PyTorch operator library was not built (no libtorch-dev)")


def test_bounded_run(torch_run, tmp_path):
    # CI's share: 40 mutated inputs and command lines, each ending in exit 0
    # with the model's output or exit 1 with one line.
    lines = []
    failures = torch_run_fuzz.run(torch_run, 1, 40, 0, str(tmp_path), lines.append)
    assert failures == [], "\n".join(lines)
    assert lines[-1] == "torch_run_fuzz: 40 runs, 0 failures"


@pytest.mark.parametrize("script,why", [
    ("kill -SEGV $$", "exit status -11"),
    ("echo 'nnc-torch-run: error: a' >&2; echo 'nnc-torch-run: error: b' >&2; exit 1",
     "exit 1 without one error line"),
    ("exit 0", "exit 0 and no output"),
    ("sleep 30", "hung"),
])
def test_the_oracle_reports_each_kind_of_failure(tmp_path, script, why):
    tool = tmp_path / "tool.sh"
    tool.write_text("#!/bin/sh\n" + script + "\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    module, model = torch_run_fuzz.make_model(str(tmp_path))
    failure = torch_run_fuzz.check_one(str(tool), 7, model, module, str(tmp_path), timeout=3,
                                       mutations=False)
    assert failure is not None and failure[0].startswith(why), failure
