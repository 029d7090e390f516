"""Data-parallel shards: a batch split into equal shards, each run by its own plan on
its own thread (BLAS at one thread), the shards' losses and gradients added in shard
order and scaled by 1/shards. Both routes shard alike and stay bit-identical; the
result is the unsharded step to float32 rounding, and never depends on thread timing."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from topos import ShapeError, Tensor
from topos.datasets import load_cifar10, load_mnist
from topos.training import RouteProgram, Training, Workload
from topos.workloads import resolve

LOADERS = {"cifar10": load_cifar10, "mnist": load_mnist}
ROUTES = ("engine", "recorded")
STEPS = 3


@pytest.fixture(scope="module")
def datasets():
    return {name: load(None) for name, load in LOADERS.items()}


def sharded(name: str, shards: int = 2):
    """The built-in workload `name` with `shards` shards."""
    return replace(resolve(name), shards=shards)


def batch(program: RouteProgram, dataset, start: int = 0) -> dict:
    """Whole-batch feeds of `program`'s workload: the training images from `start` on."""
    indices = np.arange(start, start + program.workload.batch_size)
    return {
        program.recording.images: Tensor.adopt(dataset.train.images(indices)),
        program.recording.targets: Tensor.adopt(dataset.train.one_hot(indices)),
    }


def rows_of(feeds: dict, first: int, last: int) -> dict:
    """Rows `[first, last)` of every feed."""
    return {symbol: Tensor.adopt(tensor.numpy()[first:last]) for symbol, tensor in feeds.items()}


def gradient_arrays(program: RouteProgram, gradients) -> list[np.ndarray]:
    """Each parameter's gradient, in the recording's parameter order."""
    return [gradients.of(symbol).numpy() for symbol in program.recording.parameters]


def result_bits(program: RouteProgram, result) -> tuple[bytes, list[bytes]]:
    """A compute's loss and gradients as bytes."""
    loss, gradients = result
    return loss.tobytes(), [array.tobytes() for array in gradient_arrays(program, gradients)]


def blas_threads() -> list[int]:
    """The thread count of every BLAS pool this process has loaded."""
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_the_built_in_workloads_shard_as_documented():
    assert resolve("cifar10").shards == 2 and resolve("mnist").shards == 1
    assert resolve("gpt").shards == 2
    # The two-shard ones run their second shard in a process where the platform can
    # (None), their -threads variants on a thread; a workload of one's own on a thread.
    assert resolve("cifar10").shard_processes is None is resolve("gpt").shard_processes
    assert resolve("cifar10-threads").shard_processes is False
    assert resolve("gpt-threads").shard_processes is False
    assert resolve("cifar10-processes").shard_processes is True
    defaults = {field.name: field.default for field in dataclasses.fields(Workload)}
    assert defaults["shard_processes"] is False
    program = RouteProgram(resolve("cifar10"), "recorded")
    assert (program.shards, program.rows) == (2, 32)
    assert program.shard_processes is sys.platform.startswith("linux")
    images = program.network.index(program.recording.images, "test")
    assert program.network.nodes[images].shape == [32, 3, 32, 32]


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_sharded_routes_train_bit_identically(name, datasets):
    losses, parameters = {}, {}
    for route in ROUTES:
        training = Training(sharded(name), route, datasets[name], steps=STEPS)
        assert training.program.shards == 2
        losses[route] = [int(training.step(step).view(np.uint32)) for step in range(STEPS)]
        parameters[route] = {
            index: array.tobytes() for index, array in training.parameters.arrays().items()
        }
    assert losses["engine"] == losses["recorded"]
    assert len(set(losses["engine"])) == STEPS  # the loss moves: the steps really train
    assert parameters["engine"] == parameters["recorded"]


@pytest.mark.parametrize("route", ROUTES)
def test_sharded_compute_is_the_unsharded_one_to_rounding(route, datasets):
    dataset = datasets["cifar10"]
    whole = RouteProgram(sharded("cifar10", 1), route)
    halves = RouteProgram(sharded("cifar10", 2), route)
    expected_loss, expected = whole.compute(whole.network.parameters(), batch(whole, dataset))
    loss, gradients = halves.compute(halves.network.parameters(), batch(halves, dataset))
    assert isinstance(loss, np.float32)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    pairs = zip(gradient_arrays(halves, gradients), gradient_arrays(whole, expected), strict=True)
    for actual, reference in pairs:
        assert actual.dtype == np.float32 and actual.shape == reference.shape
        # Elements near zero cancel: their rounding is relative to the gradient's scale.
        scale = np.abs(reference).max()
        np.testing.assert_allclose(actual, reference, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize(
    ("name", "shards", "route"),
    [("cifar10", 2, "engine"), ("cifar10", 2, "recorded"), ("mnist", 4, "engine")],
)
def test_sharded_compute_is_the_shards_added_in_order_then_scaled(name, shards, route, datasets):
    program = RouteProgram(sharded(name, shards), route)
    parameters = program.network.parameters()
    feeds = batch(program, datasets[name], start=128)
    rows = program.rows
    assert rows * shards == program.workload.batch_size
    # By hand: plan i on rows [i*rows, (i+1)*rows), BLAS at one thread as in a shard.
    losses, pieces = [], []
    with threadpool_limits(limits=1, user_api="blas"):
        for shard, plan in enumerate(program.plans):
            run = plan.forward(parameters, rows_of(feeds, shard * rows, (shard + 1) * rows))
            losses.append(run.of(program.recording.loss).scalar())
            pieces.append(gradient_arrays(program, program.gradients(run, parameters)))
    scale = np.float32(1 / shards)
    loss = losses[0]
    for other in losses[1:]:
        loss = loss + other
    gradients = []
    for position in range(len(program.recording.parameters)):
        total = pieces[0][position]
        for piece in pieces[1:]:
            total = total + piece[position]
        gradients.append(total * scale)
    assert len({each.tobytes() for each in losses}) == shards  # the shards saw different rows
    actual_loss, actual = program.compute(parameters, feeds)
    assert actual_loss.tobytes() == (loss * scale).tobytes()
    for array, expected in zip(gradient_arrays(program, actual), gradients, strict=True):
        assert array.dtype == expected.dtype == np.float32
        assert array.tobytes() == expected.tobytes()


@pytest.mark.parametrize(
    ("name", "shards", "route"),
    [("cifar10", 2, "engine"), ("cifar10", 2, "recorded"), ("mnist", 4, "recorded")],
)
def test_the_result_does_not_depend_on_thread_timing(name, shards, route, datasets, monkeypatch):
    program = RouteProgram(sharded(name, shards), route)
    parameters = program.network.parameters()
    feeds = batch(program, datasets[name])
    expected = result_bits(program, program.compute(parameters, feeds))
    for _ in range(4):
        assert result_bits(program, program.compute(parameters, feeds)) == expected
    # Whichever shard finishes last, the sum is taken in shard order (with four shards
    # an order of completion would round differently).
    for slow in program.plans:
        forward = slow.forward

        def delayed(*arguments, forward=forward, **keywords):
            time.sleep(0.05)
            return forward(*arguments, **keywords)

        monkeypatch.setattr(slow, "forward", delayed)
        assert result_bits(program, program.compute(parameters, feeds)) == expected
        monkeypatch.undo()


def test_a_shard_count_that_does_not_divide_the_batch_is_refused():
    for shards in (3, 5, 0, -2):
        with pytest.raises(ValueError, match=f"workload 'cifar10': {shards} shards do not divide"):
            sharded("cifar10", shards)
    with pytest.raises(ValueError, match="workload 'mnist'"):
        replace(resolve("mnist"), batch_size=10, shards=4)
    assert sharded("mnist", 64).batch_size == 64  # one row a shard is still a division


@pytest.mark.parametrize("route", ROUTES)
def test_each_shard_has_its_own_plan_and_arena_and_release_frees_them_all(route, datasets):
    program = RouteProgram(sharded("mnist", 2), route)
    plans = program.plans
    assert len(plans) == 2 and plans[0] is not plans[1] and program.plan is plans[0]
    parameters = program.network.parameters()
    feeds = batch(program, datasets["mnist"])
    expected = result_bits(program, program.compute(parameters, feeds))
    # Each plan ran exactly once, into an arena of its own.
    assert [plan.generation for plan in plans] == [1, 1]
    blocks = [plan._arena.block for plan in plans]
    assert not np.may_share_memory(blocks[0], blocks[1])
    loss = program.network.index(program.recording.loss, "test")
    backwards = [plan.backward_plan(loss) for plan in plans] if route == "engine" else []
    if backwards:
        assert backwards[0] is not backwards[1]
        assert not np.may_share_memory(backwards[0].block, backwards[1].block)
    program.release()
    assert all(plan._arena is None for plan in plans)
    assert all(backward.block is None for backward in backwards)
    # The next compute allocates them afresh and computes the same bits.
    assert result_bits(program, program.compute(parameters, feeds)) == expected
    assert [plan.generation for plan in plans] == [2, 2]
    assert all(plan._arena is not None for plan in plans)
    assert all(backward.block is not None for backward in backwards)


@pytest.mark.parametrize("route", ROUTES)
def test_blas_runs_one_thread_a_shard_during_a_compute_and_is_restored_after(
    route, datasets, monkeypatch
):
    program = RouteProgram(sharded("mnist", 2), route)
    parameters = program.network.parameters()
    feeds = batch(program, datasets["mnist"])
    seen = {}
    for shard, plan in enumerate(program.plans):

        def watched(*arguments, shard=shard, forward=plan.forward, **keywords):
            seen[shard] = (threading.current_thread(), blas_threads())
            return forward(*arguments, **keywords)

        monkeypatch.setattr(plan, "forward", watched)
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != [2] * len(blas_threads()) or not blas_threads():
            pytest.skip("this BLAS cannot run two threads, so a limit of one is not visible")
        program.compute(parameters, feeds)
        assert blas_threads() == [2] * len(blas_threads())  # restored
    # Shard 0 ran on the caller's thread, shard 1 on another; both at one BLAS thread.
    assert sorted(seen) == [0, 1]
    assert seen[0][0] is threading.current_thread() is not seen[1][0]
    assert all(threads == [1] * len(threads) for _, threads in seen.values())


def test_a_batch_the_shards_do_not_split_is_refused_naming_the_input():
    program = RouteProgram(resolve("cifar10"), "recorded")
    feeds = {
        program.recording.images: Tensor.filled([50, 3, 32, 32], 0.0),
        program.recording.targets: Tensor.filled([64, 10], 0.0),
    }
    with pytest.raises(ShapeError, match=r"^compute: the feed for input %\d+ has shape \[50,"):
        program.compute(program.network.parameters(), feeds)


def test_programs_share_their_shard_threads():
    first = RouteProgram(resolve("cifar10-threads"), "engine")
    second = RouteProgram(resolve("cifar10-threads"), "recorded")
    assert first._threads is second._threads is not None
