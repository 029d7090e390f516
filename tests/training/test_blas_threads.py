"""The BLAS threads a shard computes on: one by default, for a workload of one's own of
one shard too, so it never spin-waits beside another program (issue 30); the choice is
tested here, its timing in `benchmarks/busy_neighbour.py`."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from topos import Tensor
from topos.datasets import load_mnist
from topos.training import RouteProgram, Workload
from topos.training.blas_threads import DEFAULT_BLAS_THREADS, shard_blas_threads
from topos.workloads import resolve


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_a_shard_whatever_the_shard_count():
    assert DEFAULT_BLAS_THREADS == 1
    for shards in (1, 2, 4):
        assert shard_blas_threads(1, shards, available=2) == 1
        assert shard_blas_threads(1, shards, available=1) == 1


def test_more_threads_when_asked_never_more_than_the_process_has():
    assert shard_blas_threads(2, 1, available=2) == 2
    assert shard_blas_threads(8, 1, available=2) == 2
    assert shard_blas_threads(2, 1, available=1) == 1


def test_none_leaves_one_shard_as_the_process_is_and_shard_threads_at_one():
    assert shard_blas_threads(None, 1, available=2) is None
    assert shard_blas_threads(None, 2, available=2) == 1


def test_fewer_than_one_thread_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        shard_blas_threads(0, 1, available=2)
    with pytest.raises(ValueError, match=r"blas_threads 0 < 1"):
        replace(resolve("mnist"), blas_threads=0)


def test_every_workload_defaults_to_one_blas_thread():
    defaults = {field.name: field.default for field in dataclasses.fields(Workload)}
    assert defaults["blas_threads"] == 1 and defaults["shards"] == 1
    for name in ("cifar10", "gpt", "llama", "mnist", "cifar10-threads"):
        assert resolve(name).blas_threads == 1


@pytest.mark.parametrize("requested, inside", [(1, 1), (None, 2)])
def test_a_one_shard_step_computes_on_the_threads_chosen(monkeypatch, requested, inside):
    with threadpool_limits(limits=2, user_api="blas"):
        if not blas_threads() or blas_threads() != [2] * len(blas_threads()):
            pytest.skip("this BLAS cannot run two threads, so a limit of one is not visible")
        workload = replace(resolve("mnist"), blas_threads=requested)
        program = RouteProgram(workload, "recorded")
        assert program.blas_threads == requested
        seen = []
        forward = program.plan.forward

        def watched(*arguments, **keywords):
            seen.append(blas_threads())
            return forward(*arguments, **keywords)

        monkeypatch.setattr(program.plan, "forward", watched)
        train = load_mnist(None).train
        indices = np.arange(workload.batch_size)
        feeds = {
            program.recording.images: Tensor.adopt(train.images(indices)),
            program.recording.targets: Tensor.adopt(train.one_hot(indices)),
        }
        program.compute(program.network.parameters(), feeds)
        assert seen == [[inside] * len(blas_threads())]
        assert blas_threads() == [2] * len(blas_threads())  # restored after the step
