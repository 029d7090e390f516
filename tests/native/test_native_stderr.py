"""What a native worker's stderr carries to the user (issue 48): PyTorch's profiler
(kineto), which measures a step's tensors before ready, writes `USDT:` lines (and, on a
CUDA build without a GPU, `ERROR: gpuGetDeviceCount failed`) to the worker's stderr
itself; none of it may reach the user or the result's stderr tail, and a real error the
step writes there must still be shown."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli.grading import ROOT, topos

pytest.importorskip("torch")

#: A line kineto writes: `USDT:2026-12-03 14:48:49 11568:11568 File.cpp:39] ...`.
KINETO_LINE = re.compile(r"^[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.cpp:\d+\]")

FAILING_STEP = """\
import os
import sys

import torch
from torch import nn

from topos.native import TorchWorkload

calls = []


def loss(model, inputs, targets):
    calls.append(1)
    if len(calls) > 3:  # after the profiler measured step 0's tensors, mid-training
        # As a library that fails in C says so: a line on stderr, then the process ends.
        print("my step: the real error, on stderr", file=sys.stderr, flush=True)
        os._exit(3)
    return nn.functional.mse_loss(model(inputs), targets)


def data(directory):
    generator = torch.Generator().manual_seed(3)
    return torch.randn(32, 4, generator=generator), torch.randn(32, 2, generator=generator)


workload = TorchWorkload(
    name="failing-step",
    model=lambda: nn.Linear(4, 2),
    loss=loss,
    optimizer=lambda parameters: torch.optim.SGD(parameters, lr=0.1),
    data=data,
    batch_size=8,
    defaults=("eager",),
)
"""


def test_the_profilers_lines_never_reach_the_user_but_a_real_error_does(tmp_path):
    (tmp_path / "failing_step.py").write_text(FAILING_STEP)
    completed = topos(
        "grade",
        "--workload",
        "failing_step.py",
        "--routes",
        "eager",
        "--steps",
        "4",
        "--warmup",
        "0",
        "--json",
        "result.json",
        cwd=tmp_path,
        timeout=300,
        PYTHONPATH=str(ROOT),
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    (run,) = json.loads((tmp_path / "result.json").read_text())["repeats"]
    assert run["status"] == "failed"
    # The profiler ran (its figure is in the ready facts), and said nothing.
    assert run["facts"]["ready"]["native"]["step_tensor_bytes"] > 0
    tail = run["facts"]["stderr_tail"]
    assert "my step: the real error, on stderr" in tail, tail
    assert not [line for line in tail if KINETO_LINE.match(line)], tail
    shown = completed.stdout + completed.stderr
    assert "my step: the real error, on stderr" in shown and "exit status 3" in shown
    assert "USDT" not in shown and "gpuGetDeviceCount" not in shown, shown
