"""A project of one's own, in a scratch git repository: what `topos grade --against`
grades in a user's checkout, built in a test's `tmp_path`, never in this repository.

The project holds one workload package, `mymlp` (a perceptron written as a user
writes one from the docs: its own synthetic data, `Linear` layers, a cross-entropy
loss), with a base commit on `main`. `change` commits a change on a branch `pull`, as
a pull request would: `"shuffle"` changes the batch order (so the losses differ from
step 0), `"sleep"` adds a pause to every step's feeds (slower, same bits), `"docs"`
changes a README only (the same code).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.grading import ROOT, topos

#: How the tests name the project's workload: as a user does, `module:attribute`.
PROJECT_WORKLOAD = "mymlp.workloads:workload"

WORKLOAD_MODULE = '''"""A small perceptron of my own, graded by topos."""

import time

from topos import Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.datasets.synthetic import synthetic_dataset
from topos.training import ConstantRate, Recording, Workload
from topos.training.workload import classifier_feeds

SIDE = 6
CLASSES = 3
HIDDEN = 12
PAUSE_SECONDS = 0.0


def load_dataset(directory):
    return synthetic_dataset(
        "mine", 5, (1, SIDE, SIDE), (96, 16), CLASSES, mean=(0.5,), deviation=(0.25,)
    )


def record(tape: Tape, rows: int) -> Recording:
    inner = init.kaiming(41)
    outer = init.kaiming(42)
    first = Linear(tape, inner(Shape([SIDE * SIDE, HIDDEN])), inner(Shape([HIDDEN])))
    second = Linear(tape, outer(Shape([HIDDEN, CLASSES])), outer(Shape([CLASSES])))
    images = tape.input(Tensor.filled([rows, 1, SIDE, SIDE], 0.0))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, 1.0))
    hidden = first.express(images.reshape(rows, SIDE * SIDE)).relu()
    logits = second.express(hidden)
    loss = cross_entropy(logits, targets)
    return Recording(
        images.symbol, targets.symbol, logits.symbol, loss.symbol,
        first.parameters() + second.parameters(),
    )


def feeds(split, indices, recording):
    if PAUSE_SECONDS:
        time.sleep(PAUSE_SECONDS)
    return classifier_feeds(split, indices, recording)


workload = Workload(
    name="mymlp",
    description="my perceptron",
    record=record,
    load_dataset=load_dataset,
    learning_rate=ConstantRate(0.1),
    batch_size=8,
    shuffle_state=3,
    feeds=feeds,
)
'''


def run_git(*arguments: str, cwd: Path) -> str:
    """Runs git in `cwd` as a scratch repository's own user; its output."""
    identity = ["-c", "user.name=scratch", "-c", "user.email=scratch@example.invalid"]
    return subprocess.run(
        ["git", *identity, *arguments], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def make_project(root: Path, layout: str = "flat") -> str:
    """A git repository at `root` holding the `mymlp` package (at its top, or in `src/`
    for `layout="src"`), committed on `main`; the base commit's sha."""
    package = root / ("src" if layout == "src" else "") / "mymlp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""My workloads."""\n')
    (package / "workloads.py").write_text(WORKLOAD_MODULE)
    (root / "README.md").write_text("# my project\n")
    run_git("init", "--quiet", "--initial-branch", "main", cwd=root)
    run_git("add", ".", cwd=root)
    run_git("commit", "--quiet", "-m", "base", cwd=root)
    return run_git("rev-parse", "HEAD", cwd=root)


def change(root: Path, kind: str) -> str:
    """Commits a change of `kind` (`shuffle`, `sleep`, `docs`) on a branch `pull`, checked
    out; its sha."""
    run_git("checkout", "--quiet", "-B", "pull", cwd=root)
    module = next(root.glob("**/mymlp/workloads.py"))
    text = module.read_text()
    if kind == "shuffle":
        module.write_text(text.replace("shuffle_state=3", "shuffle_state=4"))
    elif kind == "sleep":
        module.write_text(text.replace("PAUSE_SECONDS = 0.0", "PAUSE_SECONDS = 0.03"))
    elif kind == "docs":
        (root / "README.md").write_text("# my project\n\nNow with words.\n")
    else:
        raise ValueError(kind)
    run_git("commit", "--quiet", "-am", f"a pull request: {kind}", cwd=root)
    return run_git("rev-parse", "HEAD", cwd=root)


def project_pythonpath() -> str:
    """The PYTHONPATH a user writes in their checkout, `.` (relative: the project's own
    directory), then this repository, so the topos under test is the one imported."""
    return os.pathsep.join([".", str(ROOT)])


def grade_project(
    project: Path, *arguments: str, steps: int = 4, timeout: float = 120.0, **extra: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """`topos grade --workload mymlp.workloads:workload` run from the project's checkout
    with `PYTHONPATH=.`, its result written beside the project; the process and the JSON."""
    result_path = project.parent / "result.json"
    result_path.unlink(missing_ok=True)
    extra.setdefault("PYTHONPATH", project_pythonpath())
    completed = topos(
        "grade",
        "--workload",
        PROJECT_WORKLOAD,
        "--steps",
        str(steps),
        "--json",
        str(result_path),
        *arguments,
        cwd=project,
        timeout=timeout,
        **extra,
    )
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return completed, result
