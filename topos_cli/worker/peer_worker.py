"""A peer route's worker (torch, jax): the workload's recording emitted to the peer and
trained there, with its float64 twin measured in a forked copy before it is ready."""

from __future__ import annotations

import gc
import time
from typing import Any

from topos.system import process_memory
from topos_cli import count_own_frames_as_machinery
from topos_cli.result.worker_facts import (
    Float64Facts,
    PeerFacts,
    ReadyFacts,
)
from topos_cli.worker.event_stream import EventStream
from topos_cli.worker.forked_call import forked_call
from topos_cli.worker.numerics_facts import dataset_facts
from topos_cli.worker.protocol import (
    EXIT_ERROR,
    Ready,
    WorkerCommand,
)
from topos_cli.worker.ready_facts import shared_ready_facts
from topos_cli.worker.step_loop import train_steps, wait_for_turn, warm_up
from topos_cli.worker.step_peak import StepPeak


class PeerProgram:
    """What the step loop asks of a route's program, for a peer route: no shard processes
    (a peer runs its shards one after another in its one program)."""

    @property
    def shard_process_ids(self) -> list[int]:
        return []

    def shard_process_memory(self) -> list[tuple[int, int]]:
        return []

    def close(self) -> None:
        return None


def train_peer(workload: Any, arguments: WorkerCommand, events: EventStream) -> int:
    """A peer route (`torch`, `torch-compile`, `jax`): the workload's recording emitted to
    the peer and trained there, measured as topos's routes are (steps, CPU time, RSS).

    Before it is ready it trains the workload in float64, by topos and by the peer, in a
    forked copy of itself (`float64_facts`), so the verdict can tell float32's own drift
    from a peer that parts from topos; and it computes step 0's gradients both ways, the
    peer's and topos's (the recorded route), so the verdict can say how far they agree;
    what topos's computation leaves in the heap counts in the RSS at ready, not in the
    training delta (the high-water mark is reset at ready)."""
    from topos.peers import PeerTraining

    count_own_frames_as_machinery()
    data = None if arguments.data in (None, "synthetic") else arguments.data
    float64 = float64_facts(workload, arguments.route, data, arguments.steps)
    started_loading = time.perf_counter()
    training = PeerTraining(workload, arguments.route, workload.dataset(data), arguments.steps)
    training.program = PeerProgram()
    gradient_errors = training.gradient_errors()
    lower_seconds = time.perf_counter() - started_loading
    gc.collect()
    held_seconds = wait_for_turn(events) if arguments.hold else 0.0
    if held_seconds is None:
        return EXIT_ERROR
    warm_up_times = warm_up(training, arguments.warmup)
    gc.collect()
    dataset = training.dataset
    # What the data's facts cost to read (a fingerprint hashes every byte) is not a step's.
    data_facts = dataset_facts(dataset)
    high_water_source = "proc" if process_memory.reset_high_water() else "sampling"
    ready_rss = process_memory.resident_bytes()
    settings = type(training.emitter).__name__
    ready = ReadyFacts(
        **shared_ready_facts(
            arguments,
            training.workload.name,
            data_facts,
            lower_seconds=lower_seconds,
            warm_up_times=warm_up_times,
            held_seconds=held_seconds,
            ready_rss_bytes=ready_rss,
            high_water_source=high_water_source,
        ),
        plan=[
            f"peer: {arguments.route} ({training.version}), {training.emitted_nodes} nodes "
            f"emitted, {training.shards} shard{'s' if training.shards != 1 else ''} in one "
            f"program, {_peer_threads(training.threads)}"
        ],
        posture="peer",
        shards=training.shards,
        forward_nodes=training.emitted_nodes,
        peer=PeerFacts(
            framework=arguments.route.split("-")[0],
            version=training.version,
            emitted_nodes=training.emitted_nodes,
            shards=training.shards,
            threads=training.threads,
            dtype=str(training.network.dtype),
            optimizer=settings,
            gradient_errors=gradient_errors,
            float64=float64,
        ),
    )
    events.emit(Ready(ready))
    step_peak = StepPeak()
    return train_steps(arguments, events, training, step_peak, time.perf_counter())


def float64_facts(workload: Any, route: str, data: str | None, steps: int) -> Float64Facts:
    """The workload trained in float64 by topos and by peer `route` for `steps` steps, in a
    forked copy of this worker before it imports the peer (`forked_call`): the copy's
    memory, threads and JAX's process-wide 64-bit mode die with it, and the worker is not
    yet loaded, so no route's figures count it. Without a fork, topos's float64 losses are
    computed here (NumPy's memory, freed) and the peer's are left out: its framework's
    64-bit mode would change the float32 program that follows."""
    from topos.peers.float64_trajectories import float64_trajectories

    def both() -> dict[str, Any]:
        dataset = workload.dataset(data)
        return float64_trajectories(workload, route, dataset, steps).to_json()

    answer = forked_call(both)
    if answer is None:
        dataset = workload.dataset(data)
        answer = float64_trajectories(workload, route, dataset, steps, peer=False).to_json()
    gc.collect()
    return Float64Facts.from_json(answer)


def _peer_threads(threads: int | None) -> str:
    """E.g. `on 1 thread`, or `threads as the process set them`."""
    if threads is None:
        return "threads as the process set them"
    return f"on {threads} thread{'s' if threads != 1 else ''}"
