"""A native route's worker: a PyTorch or JAX step of one's own as the route varies it,
its step 0 compared with the reference's and its step tensors counted before ready."""

from __future__ import annotations

import gc
import time
from typing import Any

from topos.system import process_memory
from topos_cli import count_own_frames_as_machinery
from topos_cli.result.worker_facts import (
    NativeFacts,
    PartitionerFacts,
    ReadyFacts,
)
from topos_cli.worker.event_stream import EventStream
from topos_cli.worker.numerics_facts import dataset_facts
from topos_cli.worker.peer_worker import _peer_threads
from topos_cli.worker.protocol import (
    EXIT_ERROR,
    Ready,
    WorkerCommand,
)
from topos_cli.worker.ready_facts import shared_ready_facts
from topos_cli.worker.step_loop import train_steps, wait_for_turn, warm_up
from topos_cli.worker.step_peak import StepPeak
from topos_cli.worker.worker_failure import WorkloadRouteError


def train_native(workload: Any, arguments: WorkerCommand, events: EventStream) -> int:
    """A native workload's route (`topos.native`): the user's PyTorch or JAX step as the
    route varies it, from the seeded parameters, on topos's batch order, measured as
    topos's routes are. Before it is ready it computes step 0 by this route and by the
    reference (`eager`, `jit`) from the same state, so the verdict can say which gradients
    part and whether the random state does; that model is freed, and the high-water mark
    reset, before the measured steps."""
    count_own_frames_as_machinery()
    from topos.names import unknown_native_route

    # The family routes (compile-budget-<f>, checkpoint-names:<a+b>) are not listed.
    mistake = unknown_native_route(
        arguments.route, workload.framework, list(workload.offered_routes)
    )
    if mistake is not None:
        raise WorkloadRouteError(f"workload {workload.name!r}: {mistake}")
    data = None if arguments.data in (None, "synthetic") else arguments.data
    started_loading = time.perf_counter()
    training = workload.training(arguments.route, data, arguments.steps)
    comparison = training.compare_with_reference()
    # After the comparison (a compiled route has compiled), never a measured step.
    step_tensors, no_step_tensors = _step_tensors(training)
    lower_seconds = time.perf_counter() - started_loading
    gc.collect()
    held_seconds = wait_for_turn(events) if arguments.hold else 0.0
    if held_seconds is None:
        return EXIT_ERROR
    warm_up_times = warm_up(training, arguments.warmup)
    gc.collect()
    # What the data's facts cost to read (a fingerprint hashes every byte) is not a step's.
    data_facts = dataset_facts(training.dataset)
    high_water_source = "proc" if process_memory.reset_high_water() else "sampling"
    ready_rss = process_memory.resident_bytes()
    route = training.route
    threads = workload.threads
    # A compiled route has compiled by now (step 0 above): the partitioner has planned.
    estimates, no_estimate = getattr(training, "partitioner_estimates", lambda: ([], None))()
    ready = ReadyFacts(
        **shared_ready_facts(
            arguments,
            workload.name,
            data_facts,
            lower_seconds=lower_seconds,
            warm_up_times=warm_up_times,
            held_seconds=held_seconds,
            ready_rss_bytes=ready_rss,
            high_water_source=high_water_source,
        ),
        plan=[
            f"native: {workload.framework} {training.version}, "
            f"{route.description or arguments.route}, {_native_threads(workload)}"
        ],
        posture="native",
        shards=1,
        native=NativeFacts(
            framework=workload.framework,
            reference=workload.reference_route,
            exact=route.exact,
            version=training.version,
            description=route.description or None,
            threads=threads,
            gradient_errors=comparison.gradient_errors,
            differing_gradients=comparison.differing_gradients,
            step0_loss_identical=comparison.loss_identical,
            rng_matches_reference=comparison.rng_matches_reference,
            partitioner=[PartitionerFacts(**estimate) for estimate in estimates],
            partitioner_unavailable=no_estimate,
            gradient_scale=comparison.gradient_scale,
            step_tensor_bytes=None if step_tensors is None else step_tensors.peak_bytes,
            step_tensor_source=None if step_tensors is None else step_tensors.source,
            step_tensor_parts={} if step_tensors is None else dict(step_tensors.parts),
            step_tensors_unavailable=no_step_tensors,
        ),
    )
    events.emit(Ready(ready))
    return train_steps(arguments, events, training, StepPeak(), time.perf_counter())


def _step_tensors(training: Any) -> tuple[Any, str | None]:
    """The route's step tensors (`topos.native.step_tensors`), or None and why not: a
    framework whose profiler or analysis fails here costs the figure, not the grade."""
    measure = getattr(training, "step_tensors", None)
    if measure is None:
        return None, "this route's training measures no step tensors"
    try:
        measured = measure()
    except Exception as error:  # any framework's failure, said in one line
        lines = str(error).splitlines()
        return None, f"{type(error).__name__}: {lines[0] if lines else ''}"
    if measured is None:
        return None, "the framework gave no memory analysis of the compiled step"
    return measured, None


def _native_threads(workload: Any) -> str:
    """The threads a native route computes on, e.g. `on 1 thread`; JAX's are XLA's own."""
    if workload.framework == "jax":
        return "on XLA's own threads (the process's cores: JAX takes no count)"
    return _peer_threads(workload.threads)
