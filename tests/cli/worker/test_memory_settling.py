"""Memory settling: the warm-up's computation repeats until one leaves VmRSS unchanged."""

import itertools

from topos_cli.worker import memory_settling


def test_settling_stops_at_the_first_computation_that_leaves_the_resident_set_alone(
    monkeypatch,
):
    readings = iter([100, 140, 140, 140])
    monkeypatch.setattr(memory_settling.process_memory, "resident_bytes", lambda: next(readings))
    computations = []
    assert memory_settling.settle_memory(lambda: computations.append(1)) == 2
    assert len(computations) == 2


def test_settling_gives_up_after_its_cap(monkeypatch):
    growing = itertools.count(0, 4096)
    monkeypatch.setattr(memory_settling.process_memory, "resident_bytes", lambda: next(growing))
    most = memory_settling.MOST_COMPUTATIONS
    assert memory_settling.settle_memory(lambda: None) == most


def test_without_proc_one_computation_runs(monkeypatch):
    monkeypatch.setattr(memory_settling.process_memory, "resident_bytes", lambda: None)
    assert memory_settling.settle_memory(lambda: None) == 1
