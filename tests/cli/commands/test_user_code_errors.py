"""A mistake in a user's workload code ends every command in exit 2 and one line naming
the user's file and line, never a traceback nor "internal error"; `topos grade` and
`topos frontier` refuse it before any worker starts, writing no result.

The workloads are written in the test's own folder, as a user writes one: an
`AttributeError` in `record`, a bad `Split(...)` in `load_dataset` (raised inside topos,
named at the user's line that called it), and an exception in `feeds`."""

from __future__ import annotations

import os
import textwrap

import pytest

from tests.cli.grading import ROOT, one_line_error, topos

BROKEN = textwrap.dedent(
    """
    from dataclasses import replace

    import numpy as np

    from topos import Shape, init
    from topos.datasets import Dataset, Split
    from tests.support.user_models import record_resnet, resnet_workload


    def record(tape, rows, dtype=np.float32):
        recording = record_resnet(tape, rows, dtype)
        recording.logits.amax  # RECORD: a NumPy habit; a symbol has no amax
        return recording


    def _split(count):
        pixels = np.zeros((count, 3, 8, 8), dtype=np.uint8)
        labels = np.arange(count - 1) % 4
        return Split(pixels, labels, 4, mean=(0.4,) * 3, deviation=(0.25,) * 3)  # SPLIT


    def load_dataset(directory):
        return Dataset("short", "synthetic", "synthetic", lambda: _split(64), lambda: _split(16))


    def feeds(split, indices, recording):
        return {recording.images: split.pixels[indices].standardised()}  # FEEDS


    def record_init(tape, rows, dtype=np.float32):
        init.kaiming(1)(Shape([]))  # INIT: raised inside topos, at the user's call
        return record_resnet(tape, rows, dtype)


    record_error = replace(resnet_workload, name="record_error", record=record)
    init_error = replace(resnet_workload, name="init_error", record=record_init)
    split_error = replace(resnet_workload, name="split_error", load_dataset=load_dataset)
    feeds_error = replace(resnet_workload, name="feeds_error", feeds=feeds)
    """
)


def _line(marker: str) -> int:
    """The line of `broken.py` the marker comment is on."""
    return next(n for n, line in enumerate(BROKEN.splitlines(), 1) if f"# {marker}" in line)


EXPECTED = {
    "record_error": f"AttributeError in your workload at broken.py:{_line('RECORD')} (in record)",
    "split_error": f"ValueError in your workload at broken.py:{_line('SPLIT')} (in _split)",
    "init_error": f"ValueError in your workload at broken.py:{_line('INIT')} (in record_init)",
    "feeds_error": f"AttributeError in your workload at broken.py:{_line('FEEDS')} (in feeds)",
}


def _run(tmp_path, command: str, workload: str, *arguments: str):
    (tmp_path / "broken.py").write_text(BROKEN)
    completed = topos(
        command, "--workload", f"broken:{workload}", *arguments, cwd=tmp_path,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]),
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert line.startswith(f"topos: error: {EXPECTED[workload]}: "), line
    assert "internal error" not in completed.stderr
    return completed


@pytest.mark.parametrize(
    ("command", "workload"),
    [
        ("describe", "record_error"),
        ("check", "record_error"),
        ("train", "record_error"),
        ("train", "split_error"),
        ("check", "split_error"),
        ("describe", "init_error"),
        ("train", "init_error"),
        ("check", "feeds_error"),
        ("train", "feeds_error"),
    ],
)
def test_a_user_code_error_names_the_users_line(tmp_path, command, workload):
    arguments = ("--steps", "2") if command == "train" else ()
    _run(tmp_path, command, workload, *arguments)


@pytest.mark.parametrize("workload", ["record_error", "split_error", "feeds_error"])
def test_grade_refuses_a_user_code_error_before_any_worker_starts(tmp_path, workload):
    completed = _run(tmp_path, "grade", workload, "--steps", "2", "--routes", "engine,recorded")
    # No worker ran (no progress, no route failed) and no failed grade was written.
    assert "route" not in completed.stderr
    assert sorted(path.name for path in tmp_path.iterdir() if path.suffix != "") == ["broken.py"]
    assert not (tmp_path / "results").exists()


def test_frontier_refuses_a_user_code_error_before_any_worker_starts(tmp_path):
    completed = _run(tmp_path, "frontier", "record_error", "--steps", "2")
    assert "route" not in completed.stderr
    assert not (tmp_path / "results").exists()


LATE = textwrap.dedent(
    """
    from dataclasses import replace

    from topos.training.workload import classifier_feeds
    from tests.support.user_models import resnet_workload

    calls = []


    def feeds(split, indices, recording):
        calls.append(len(indices))
        if len(calls) > 1:
            raise RuntimeError("the second batch is not ready")  # LATE
        return classifier_feeds(split, indices, recording)


    late_error = replace(resnet_workload, name="late_error", feeds=feeds)
    """
)


def test_a_user_code_error_a_worker_meets_is_still_the_users(tmp_path):
    # The preflight feeds one batch; the worker's second call to `feeds` raises.
    (tmp_path / "late.py").write_text(LATE)
    line = next(n for n, text in enumerate(LATE.splitlines(), 1) if "# LATE" in text)
    completed = topos(
        "grade", "--workload", "late:late_error", "--steps", "2", "--routes", "engine",
        "--json", str(tmp_path / "result.json"), cwd=tmp_path,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]),
    )  # fmt: skip
    assert completed.returncode == 2, completed.stderr
    assert one_line_error(completed).endswith(
        f"RuntimeError in your workload at late.py:{line} (in feeds): the second batch is not ready"
    )
