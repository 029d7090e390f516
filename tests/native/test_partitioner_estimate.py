"""PyTorch's partitioner's estimate where it cannot be read: a PyTorch without the
private functions it is read from says so in one line, records nothing, and its compiled
point reads "no estimate" in the frontier's table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli.grading import environment
from topos_cli.render.native_frontier_point import NativeFrontierPoint
from topos_cli.render.native_frontier_table import estimate_words, native_frontier_notes

pytest.importorskip("torch")

#: In a process of its own (the recording is process-wide): a PyTorch whose partitioner
#: has no knapsack to read, as another version may have none.
WITHOUT_KNAPSACK = """
import json
import torch._functorch.partitioners as partitioners
del partitioners._optimize_runtime_with_given_memory
from topos.native import partitioner_estimate
partitioner_estimate.record_estimates()
print(json.dumps([partitioner_estimate.unavailable(), len(partitioner_estimate.recorded())]))
"""


def test_a_pytorch_without_the_partitioners_functions_gives_no_estimate_and_says_why():
    completed = subprocess.run(
        [sys.executable, "-c", WITHOUT_KNAPSACK],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    why, recorded = json.loads(completed.stdout.splitlines()[-1])
    assert why == (
        "this PyTorch's partitioner has no _optimize_runtime_with_given_memory to read its "
        "estimate from"
    )
    assert recorded == 0
    point = NativeFrontierPoint("compile-budget-0.5", 0.5, "ok", compiled=True, no_estimate=why)
    assert estimate_words(point) == "no estimate"
    assert native_frontier_notes([point]) == [f"compile-budget-0.5: no estimate: {why}"]
