"""A peer worker runs with glibc's own mmap threshold (PyTorch and JAX allocate a step's
tensors afresh, and at the grader's 64 KiB threshold each would fault its pages in again
every step), unless the grader's own environment sets one, which every worker keeps."""

from __future__ import annotations

from topos_cli.harness.worker_environment import peer_environment, worker_environment


def test_a_peer_drops_the_graders_threshold_only():
    machine = {"PATH": "/bin"}
    routes = worker_environment(1, machine)
    assert routes["MALLOC_MMAP_THRESHOLD_"] == "65536"
    peer = peer_environment(routes, base=machine)
    assert "MALLOC_MMAP_THRESHOLD_" not in peer
    assert {key: value for key, value in routes.items() if key != "MALLOC_MMAP_THRESHOLD_"} == peer


def test_a_threshold_the_user_set_reaches_the_peer_too():
    machine = {"PATH": "/bin", "MALLOC_MMAP_THRESHOLD_": "131072"}
    peer = peer_environment(worker_environment(None, machine), base=machine)
    assert peer["MALLOC_MMAP_THRESHOLD_"] == "131072"
