"""`topos frontier` over a native step written as a user writes one: a PyTorch step's
activation memory budgets, each point in a worker of its own, PyTorch's partitioner's
estimate beside each compiled point, a smaller budget that measures more memory than a
larger one flagged in the table, the picture and the result; a JAX step's checkpoint
policies as its points; the budgets' mistakes refused in one line."""

from __future__ import annotations

import json
import os
import shutil
import textwrap

import pytest

from tests.cli.grading import ROOT, topos
from tests.native.once_per_session import run_once_per_session
from topos_cli.commands.native_frontier import activation_budget_of, native_points
from topos_cli.render.native_frontier_point import NativeFrontierPoint, flag_memory
from topos_cli.render.report_contents import gather_report_contents
from topos_cli.render.report_html import render_report_html
from topos_cli.result.lenient_result import interpret_result
from topos_cli.result.worker_facts import PartitionerFacts
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.units import MEBIBYTE

needs_compiler = pytest.mark.skipif(
    shutil.which(os.environ.get("CXX", "g++")) is None,
    reason="a compile-budget route is refused without a C++ compiler",
)

#: A user's regression whose budget routes are their own and compile nothing: the
#: smaller budget's keeps 48 MiB alive through each step, the larger's none, so the
#: smaller budget measures more memory, as PyTorch's tracker reports of a real one.
HOARDING = """
import torch
from torch import nn

from topos.native import TorchWorkload


def keeping(mebibytes):
    def make(model, loss, blocks):
        def loss_of(inputs, targets):
            kept = torch.ones(mebibytes * 262144)
            return loss(model, inputs, targets) + 0 * kept.sum()

        return loss_of

    return make


def data(directory):
    generator = torch.Generator().manual_seed(3)
    inputs = torch.randn(64, 8, generator=generator)
    return inputs, inputs.sum(dim=1, keepdim=True).sin()


workload = TorchWorkload(
    name="hoarding",
    model=lambda: nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)),
    loss=lambda model, inputs, targets: nn.functional.mse_loss(model(inputs), targets),
    optimizer=lambda parameters: torch.optim.SGD(parameters, lr=0.1),
    data=data,
    batch_size=8,
    blocks=lambda model: [model[0]],
    extra_routes={"compile-budget-0.2": keeping(48), "compile-budget-0.8": keeping(0)},
)
"""

#: A user's small multi-layer perceptron, compiled for real under two budgets.
PERCEPTRON = """
import torch
from torch import nn

from topos.native import TorchWorkload


def data(directory):
    generator = torch.Generator().manual_seed(5)
    inputs = torch.randn(128, 32, generator=generator)
    return inputs, inputs.square().mean(dim=1, keepdim=True)


def model():
    return nn.Sequential(
        nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 1)
    )


workload = TorchWorkload(
    name="perceptron",
    model=model,
    loss=lambda model, inputs, targets: nn.functional.mse_loss(model(inputs), targets),
    optimizer=lambda parameters: torch.optim.Adam(parameters, lr=1e-3),
    data=data,
    batch_size=32,
    blocks=lambda model: [model[0], model[2]],
)
"""


def frontier(tmp_path, source: str | None, workload: str, *arguments: str):
    """`topos frontier` of `workload` for three steps (`source` written as its module in
    `tmp_path`), its result and picture read back."""
    if source is not None:
        (tmp_path / f"{workload.split(':')[0]}.py").write_text(textwrap.dedent(source))
    result = tmp_path / "frontier.json"
    completed = topos(
        "frontier",
        "--workload",
        workload,
        "--steps",
        "3",
        "--warmup",
        "0",
        "--json",
        str(result),
        *arguments,
        cwd=tmp_path,
        timeout=900,
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
    )
    data = json.loads(result.read_text()) if result.exists() else None
    picture = result.with_suffix(".svg")
    return completed, data, picture.read_text() if picture.exists() else None


def table_rows(stdout: str) -> dict[str, str]:
    """The printed table's rows by point: the lines before the first blank one, past the
    header and its rule."""
    table = stdout.split("\n\n", 1)[0].splitlines()[2:]
    return {line.split()[0]: line for line in table}


def _pids(data) -> dict[str, int]:
    return {run["route"]: run["facts"]["ready"]["pid"] for run in data["repeats"]}


#: The hoarding regression without blocks: a step a user gives no blocks to checkpoint.
BLOCKLESS = HOARDING.replace("    blocks=lambda model: [model[0]],\n", "")


@pytest.fixture(scope="session")
def blockless_frontier(tmp_path_factory):
    """One frontier of the blockless regression in the session (`run_once_per_session`),
    read by the tests that need it (they must not change it): its two budgets named, one
    as a fraction, one as a percentage, and no reference, so the references are what a
    step without blocks gets."""
    pytest.importorskip("torch")
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("a compile-budget route is refused without a C++ compiler")

    def blockless(tmp_path):
        completed, data, picture = frontier(
            tmp_path, BLOCKLESS, "hoarding:workload", "--budgets", "0.2,80%"
        )
        return completed, (data, picture)

    completed, (data, picture) = run_once_per_session(tmp_path_factory, "blockless", blockless)
    return completed, data, picture


@needs_compiler
def test_a_smaller_budget_measuring_more_memory_is_flagged(blockless_frontier):
    completed, data, picture = blockless_frontier
    assert completed.returncode == 0, completed.stdout + completed.stderr
    points = ["eager", "compile-budget-0.2", "compile-budget-0.8"]
    assert data["frontier"]["points"] == points
    assert data["frontier"]["budgets"] == ["0.2", "0.8"]
    pids = _pids(data)
    assert sorted(pids) == sorted(points) and len(set(pids.values())) == 3
    (flagged,) = data["frontier"]["flagged"]
    assert flagged["point"] == "compile-budget-0.2"
    assert flagged["why"].startswith("more memory than budget 0.8's point")
    rows = table_rows(completed.stdout)
    assert "⚠ flagged" in rows["compile-budget-0.2"]
    assert "flagged" not in rows["compile-budget-0.8"] and "flagged" not in rows["eager"]
    # The user's own routes are not compiled: PyTorch has nothing to estimate.
    assert "no estimate" not in rows["compile-budget-0.2"]
    assert "⚠ compile-budget-0.2" in picture and "⚠ compile-budget-0.8" not in picture
    # `topos report` on the result draws the same table and flags.
    contents = gather_report_contents(interpret_result(data, "frontier.json"))
    page = render_report_html(contents, svgs=dict.fromkeys(("memory", "steps", "loss"), "<svg/>"))
    assert "⚠ compile-budget-0.2: more memory than budget 0.8" in page
    assert "PyTorch" in page and "training Δ MiB" in page


@needs_compiler
def test_a_step_without_blocks_is_graded_beside_eager_alone(blockless_frontier):
    assert BLOCKLESS != HOARDING
    completed, data, _ = blockless_frontier
    assert completed.returncode == 0, completed.stdout + completed.stderr
    # No checkpoint nor selective point, which would fail for want of blocks: the
    # references are eager alone, beside the budgets asked for.
    assert data["frontier"]["points"] == ["eager", "compile-budget-0.2", "compile-budget-0.8"]


def test_budgets_of_a_pytorch_step_are_fractions_beside_its_routes():
    offered = ["eager", "checkpoint", "selective", "compile", "mine"]
    assert activation_budget_of("0.5") == activation_budget_of("50%") == 0.5
    assert activation_budget_of("compile-budget-0.25") == 0.25
    assert activation_budget_of("1.5") is None and activation_budget_of("floor") is None
    assert native_points("torch", offered, None) == (
        "eager",
        "checkpoint",
        "selective",
        "compile-budget-0.2",
        "compile-budget-0.5",
        "compile-budget-0.8",
    )
    assert native_points("torch", offered, ["mine", "50%", "0.5", "0.1"]) == (
        "mine",
        "compile-budget-0.5",
        "compile-budget-0.1",
    )
    with pytest.raises(ToposUsageError, match="a frontier grades at most"):
        native_points("torch", offered, ["0.5"] * 101)
    with pytest.raises(ToposUsageError, match=r"--budgets '1\.5': a PyTorch step's budgets"):
        native_points("torch", offered, ["1.5"])
    # A JAX step's points are its policies: every route it offers unless named.
    policies = ["jit", "checkpoint-dots-saveable", "mine"]
    assert native_points("jax", policies, None) == tuple(policies)
    with pytest.raises(ToposUsageError, match="its checkpoint policies"):
        native_points("jax", ["jit", "checkpoint-dots-saveable"], ["0.5"])


def test_a_plan_over_what_its_budget_allows_is_flagged_by_its_estimate():
    # PyTorch's tracker: a solver returning plans over its max_memory. Its own figures.
    def point(label, budget, saved):
        estimate = PartitionerFacts(
            budget=budget, inputs_bytes=1 << 20, unbudgeted_bytes=9 << 20, saved_bytes=saved
        )
        return NativeFrontierPoint(
            label, budget, "ok", training_delta_bytes=8 << 20, estimates=(estimate,)
        )

    within, over = flag_memory(
        [point("compile-budget-0.5", 0.5, 5 << 20), point("compile-budget-0.25", 0.25, 4 << 20)],
        0.05,
    )
    assert within.flags == ()
    (flag,) = over.flags
    assert flag == "PyTorch's plan saves 4.00 MiB, more than the 3.00 MiB its budget allows"


def test_a_difference_within_a_steps_noise_is_not_flagged():
    def point(label, budget, mebibytes):
        return NativeFrontierPoint(
            label, budget, "ok", training_delta_bytes=int(mebibytes * MEBIBYTE)
        )

    # 2 MiB more at the smaller budget: two runs of one step differ by as much.
    lean, rich = flag_memory(
        [point("compile-budget-0.8", 0.8, 1.5), point("compile-budget-0.2", 0.2, 3.5)], 0.05
    )
    assert lean.flags == () and rich.flags == ()
    (flagged,) = flag_memory(
        [point("compile-budget-0.2", 0.2, 9.5), point("compile-budget-0.8", 0.8, 1.5)], 0.05
    )[:1]
    assert flagged.flags[0].startswith("more memory than budget 0.8's point")


@pytest.mark.parametrize(
    ("budgets", "message"),
    [
        ("eager,1.5", "--budgets '1.5': a PyTorch step's budgets are activation memory"),
        ("eager,,0.5", "has an empty budget between commas"),
    ],
)
def test_a_budget_naming_nothing_is_refused_in_one_line(tmp_path, budgets, message):
    pytest.importorskip("torch")
    completed, data, picture = frontier(
        tmp_path, HOARDING, "hoarding:workload", "--budgets", budgets
    )
    assert completed.returncode == 2, completed.stdout + completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], completed.stderr
    assert data is None and picture is None


def test_a_jax_steps_points_are_its_checkpoint_policies(tmp_path):
    pytest.importorskip("jax")
    # Two points show all this (each its own worker, in the order named, no budget): a
    # third would cost a worker and show nothing more.
    points = ["jit", "checkpoint-nothing-saveable"]
    completed, data, picture = frontier(
        tmp_path, None, "tests.native.jax_regression:workload", "--budgets", ",".join(points)
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert data["frontier"]["points"] == points and data["frontier"]["budgets"] == []
    assert len(set(_pids(data).values())) == len(points)
    rows = table_rows(completed.stdout)
    assert all(point in rows for point in points)
    # No budget, and no estimate: JAX's compiler gives none, so no column says so.
    assert "PyTorch" not in completed.stdout and "budget" not in completed.stdout.split("\n")[0]
    assert all(point in picture for point in points)


@pytest.mark.compile
@needs_compiler
def test_compiled_budgets_are_measured_beside_pytorchs_estimate(tmp_path):
    # torch.compile on two shared cores: some 40 s to 90 s a budget.
    pytest.importorskip("torch")
    completed, data, _ = frontier(
        tmp_path, PERCEPTRON, "perceptron:workload", "--budgets", "eager,0.1,0.9"
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert len(set(_pids(data).values())) == 3
    runs = {run["route"]: run["facts"]["ready"]["native"] for run in data["repeats"]}
    assert runs["eager"]["partitioner"] == []
    rows = table_rows(completed.stdout)
    for route, budget in (("compile-budget-0.1", 0.1), ("compile-budget-0.9", 0.9)):
        (graph,) = runs[route]["partitioner"]
        assert graph["budget"] == pytest.approx(budget) and graph["saved_bytes"] > 0
        estimate = PartitionerFacts(**graph)
        # The partitioner's figures beside the measured ones, on the point's own row.
        saved = f"{estimate.saved_bytes / MEBIBYTE:.2f} / {estimate.allowed_bytes / MEBIBYTE:.2f}"
        assert saved in rows[route], rows[route]
    assert "—" in rows["eager"].split()[7]
