"""Shards as forked processes (`shard_processes=True`): the same bits as shard threads at
every step, a child's failure a clear error in the parent, and no child left behind by
close, by the parent's death or by an interrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.cli import generated_workloads
from topos.training import RouteProgram, Training
from topos.training.shard_processes import ShardProcessError
from topos.workloads import resolve

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

ROOT = Path(__file__).resolve().parents[2]
STEPS = 3


def trained_bits(workload, route: str, dataset, steps: int = STEPS):
    """The loss bits of each step and every parameter's bits after them."""
    training = Training(workload, route, dataset, steps)
    try:
        losses = [training.step(step).tobytes() for step in range(steps)]
        parameters = [array.tobytes() for array in training.parameters.arrays().values()]
    finally:
        training.program.close()
    return losses, parameters


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (reaped, or a zombie awaiting its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def wait_until_gone(pid: int, limit: float = 30.0) -> bool:
    """Polls until `pid` ends; a generous limit, only so a failure cannot hang the tests."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.02)
    return gone(pid)


@pytest.mark.parametrize("route", ["engine", "recorded"])
def test_cifar10_trains_bit_identically_on_threads_and_in_processes(route):
    threads = resolve("cifar10-threads")
    processes = resolve("cifar10")  # its second shard in a process, here on Linux
    assert RouteProgram(processes, route).shard_processes
    assert not RouteProgram(threads, route).shard_processes
    assert (processes.shards, processes.batch_size) == (threads.shards, threads.batch_size)
    dataset = threads.dataset(None)
    assert trained_bits(processes, route, dataset) == trained_bits(threads, route, dataset)


@pytest.mark.parametrize("route", ["engine", "recorded", "remat"])
def test_a_small_two_shard_workload_trains_bit_identically(route):
    processes = generated_workloads.processes_mlp_3
    threads = replace(processes, shard_processes=False)
    dataset = processes.dataset(None)
    assert processes.shards == 2
    assert trained_bits(processes, route, dataset, 5) == trained_bits(threads, route, dataset, 5)


def test_index_feeds_reach_the_children_bit_identically():
    gpt = resolve("gpt")  # its second shard in a process, here on Linux
    threads = resolve("gpt-threads")
    assert RouteProgram(gpt, "recorded").shard_processes
    dataset = gpt.dataset(None)
    assert trained_bits(gpt, "recorded", dataset, 2) == trained_bits(
        threads, "recorded", dataset, 2
    )


def test_compute_is_the_threads_compute_for_any_parameters():
    workload = generated_workloads.processes_convnet_4
    dataset = workload.dataset(None)
    threads = Training(replace(workload, shard_processes=False), "recorded", dataset, 1)
    processes = Training(workload, "recorded", dataset, 1)
    try:
        for start in (0, 1):
            # Parameters other than the training's own (a snapshot) reach the child too.
            loss, gradients = threads.program.compute(threads.snapshot(), threads.feeds(start))
            other_loss, other = processes.program.compute(
                processes.snapshot(), processes.feeds(start)
            )
            assert loss.tobytes() == other_loss.tobytes()
            for (_, gradient), (_, mine) in zip(gradients.items(), other.items()):
                assert gradient.numpy().tobytes() == mine.numpy().tobytes()
    finally:
        processes.program.close()


def test_close_ends_the_children_and_a_later_step_forks_anew():
    workload = generated_workloads.processes_mlp_3
    training = Training(workload, "recorded", workload.dataset(None), 3)
    program = training.program
    assert program._processes.pids == []  # nothing forked before the first step
    training.step(0)
    (first,) = program._processes.pids
    program.close()
    assert gone(first)
    training.step(1)
    (second,) = program._processes.pids
    assert second != first
    program.close()
    assert gone(second)


def test_a_failing_child_is_a_one_line_error_and_ends_the_children():
    workload = generated_workloads.processes_mlp_3
    training = Training(workload, "recorded", workload.dataset(None), 1)
    program = training.program

    def broken(*arguments, **keywords):
        raise ValueError("the kernel broke\nsecond line")

    program.plans[1].forward = broken  # the child inherits it; shard 0 is unaffected
    feeds = training.feeds(0)
    with pytest.raises(ShardProcessError) as caught:
        program.compute(training.parameters, feeds)
    message = str(caught.value)
    assert "shard 1" in message and "ValueError: the kernel broke" in message
    assert "\n" not in message
    assert program._processes.pids == []  # closed: its child is reaped


def test_a_child_that_dies_is_an_error_not_a_hang():
    workload = generated_workloads.processes_mlp_3
    training = Training(workload, "recorded", workload.dataset(None), 3)
    training.step(0)
    (child,) = training.program._processes.pids
    os.kill(child, signal.SIGKILL)
    with pytest.raises(ShardProcessError, match="shard 1's process"):
        training.step(1)
    assert gone(child)


MEMORY_SCRIPT = textwrap.dedent(
    """
    from topos.training import Training
    from topos.workloads import resolve

    workload = resolve("cifar10-processes")  # an arena far past the mmap threshold
    training = Training(workload, "recorded", workload.dataset(None), 3)
    program = training.program
    assert program.mark_ready() == [] and program.shard_process_memory() == []
    training.warm_up()
    program.release()
    (ready,) = program.mark_ready()
    training.step(0)
    ((at_ready, peak),) = program.shard_process_memory()
    program.close()
    print(ready, at_ready, peak, program.plans[1].arena_bytes)
    """
)


def test_the_children_report_their_private_memory_at_ready_and_peak():
    # A fresh process whose malloc maps large arrays of their own, as the grader's
    # worker does: a released arena is then unmapped, and its return is counted.
    completed = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"},
        timeout=300,
        check=True,
    )
    ready, at_ready, peak, arena = (int(word) for word in completed.stdout.split())
    assert at_ready == ready > 0
    # The child's arena comes back with the first step after release, so its peak is
    # above its memory at ready by at least the arena.
    assert peak - ready >= arena


CHILD_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    from tests.cli import generated_workloads
    from topos.training import Training

    workload = generated_workloads.processes_mlp_3
    training = Training(workload, "recorded", workload.dataset(None), 100000)
    training.step(0)
    print(training.program._processes.pids[0], flush=True)
    if sys.argv[1] == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    step = 1
    while True:
        training.step(step % 1000)
        step += 1
    """
)


def start_script(how: str) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD_SCRIPT, how],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    child = int(process.stdout.readline())
    return process, child


def test_the_children_die_with_a_parent_killed_outright():
    process, child = start_script("die")
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert wait_until_gone(child)


def test_an_interrupt_to_the_process_group_ends_parent_and_children():
    process, child = start_script("train")
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0
    assert wait_until_gone(child)


def test_shard_processes_are_refused_off_linux_in_one_line(monkeypatch):
    from topos.training import shard_processes

    monkeypatch.setattr(shard_processes.sys, "platform", "darwin")
    with pytest.raises(ShardProcessError) as caught:
        RouteProgram(generated_workloads.processes_mlp_3, "recorded")
    assert "need Linux" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["cifar10", "gpt"])
def test_off_linux_the_built_in_workloads_shard_on_threads(name, monkeypatch):
    from topos.training import shard_processes
    from topos_cli.commands.workload_program import sharded_line as _sharded_line

    monkeypatch.setattr(shard_processes.sys, "platform", "darwin")
    program = RouteProgram(resolve(name), "recorded")
    assert not program.shard_processes and program._processes is None
    assert program._threads is not None
    assert _sharded_line(program).endswith("on a thread of its own (shard processes need Linux)")
    # Asking for processes outright is still refused there, in one line.
    with pytest.raises(ShardProcessError, match="need Linux"):
        RouteProgram(replace(resolve(name), shard_processes=True), "recorded")


def test_one_shard_needs_no_process():
    workload = replace(resolve("mnist"), shard_processes=True)
    training = Training(workload, "recorded", workload.dataset(None), 1)
    assert training.program._processes is None
    assert np.isfinite(training.step(0))
