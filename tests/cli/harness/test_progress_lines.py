"""The plain progress lines a grade writes: a ready line says the plan's predicted live
volume where there is a plan to predict it, and nothing (not a '?') for a peer route."""

from __future__ import annotations

import io

from topos_cli.harness.progress import PlainProgress
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.worker_facts import LiveVolume, ReadyFacts
from topos_cli.worker import protocol


def _ready_line(facts: ReadyFacts, route: str) -> str:
    request = WorkerRequest("mine:workload", route, 5)
    stream = io.StringIO()
    progress = PlainProgress(stream, [request], repeats=1)
    progress.started(request, 4321)
    progress.event(request, protocol.Ready(facts))
    return stream.getvalue().splitlines()[-1]


def test_a_ready_line_says_a_predicted_volume_only_where_a_plan_predicts_it():
    planned = ReadyFacts(
        lower_seconds=0.2,
        ready_rss_bytes=40 << 20,
        live_volume=LiveVolume(peak_bytes=3 << 20),
    )
    line = _ready_line(planned, "recorded")
    assert "predicted live volume 3.0 MiB" in line and "lowering 0.2 s" in line
    # A peer (its framework plans its own memory) has no live volume: no '?' either.
    peer = _ready_line(ReadyFacts(lower_seconds=4.0, ready_rss_bytes=700 << 20), "torch")
    assert "predicted live volume" not in peer and "?" not in peer
    assert peer.endswith("RSS 700.0 MiB)")
