"""The worker: one route of one workload in one process, speaking the grader's protocol.

`topos_cli.worker.protocol` is its command line and its events. Events go to a private
duplicate of standard output; anything else the process prints goes to
standard error, so it can never garble them.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

from topos.names import is_peer
from topos.system import process_memory
from topos.system.free_chunk_reservation import reserve_free_chunks
from topos_cli import count_own_frames_as_machinery
from topos_cli.result.worker_facts import (
    DatasetFacts,
    Float64Facts,
    LiveVolume,
    NativeFacts,
    Numerics,
    PartitionerFacts,
    PeerFacts,
    ReadyFacts,
    RematFacts,
    ShardProcessFacts,
    StepMemoryFacts,
)
from topos_cli.worker import sampled_memory
from topos_cli.worker.code_origin import code_facts
from topos_cli.worker.forked_call import forked_call
from topos_cli.worker.memory_settling import settle_memory
from topos_cli.worker.protocol import (
    EXIT_ERROR,
    EXIT_NONFINITE,
    GO_LINE,
    GRADER_PID_VARIABLE,
    Done,
    Error,
    Event,
    Loaded,
    Nonfinite,
    Ready,
    Step,
    WorkerCommand,
    encode,
)
from topos_cli.worker.route_clock import RouteClock
from topos_cli.worker.step_counter import StepCounter
from topos_cli.worker.step_peak import StepPeak


class WorkloadRouteError(ValueError):
    """A route the workload does not offer: a usage error, reported as kind `workload`."""


class EventStream:
    """Writes events as JSON lines to a private duplicate of standard output."""

    def __init__(self) -> None:
        # Events go to a duplicate of fd 1; fd 1 itself then points at stderr, so a
        # stray print() from a workload lands in the captured stderr, not the pipe.
        self._stream: TextIO = os.fdopen(os.dup(1), "w", buffering=1)
        sys.stdout.flush()
        os.dup2(2, 1)

        #: Whether `Ready` was sent: a failure after it is the route's, not a usage error.
        self.ready = False
        self._held: list[Event] | None = None

    def emit(self, event: Event) -> None:
        """Sends one event (or keeps it, while held, to be sent at `release`)."""
        self.ready = self.ready or isinstance(event, Ready)
        if self._held is not None and not isinstance(event, Error):
            self._held.append(event)
            return
        self.release()
        self._stream.write(encode(event))

    def hold(self) -> None:
        """Keeps the events from here on until `release` (or an error) sends them.

        A counting worker says nothing while it counts: an event's text is as long as
        its timings' digits, so writing one between counted steps would leave Python's
        allocator otherwise from run to run, and the next step would count otherwise."""
        self._held = []

    def release(self) -> None:
        """Sends the events kept since `hold`, and holds no more."""
        held, self._held = self._held, None
        for event in held or ():
            self._stream.write(encode(event))


def dataset_facts(dataset: Any) -> DatasetFacts:
    """What a ready worker says of the data it trains on."""
    return DatasetFacts(
        name=dataset.name,
        source=dataset.source,
        format=dataset.format,
        fingerprint=dataset.fingerprint,
        train_images=len(dataset.train),
    )


def blas_description() -> Numerics:
    """Which NumPy and BLAS this worker computes with."""
    import numpy

    description: dict[str, Any] = {"numpy": numpy.__version__}
    try:
        config = numpy.show_config(mode="dicts")
        blas = config.get("Build Dependencies", {}).get("blas", {})
        description["blas"] = {
            key: blas.get(key) for key in ("name", "version", "openblas configuration")
        }
    except (TypeError, AttributeError):  # older NumPy without mode="dicts"
        description["blas"] = None
    description["environment"] = {
        key: os.environ.get(key)
        for key in (
            "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "OPENBLAS_CORETYPE",
            "OPENBLAS_L2_SIZE",
            "MALLOC_MMAP_THRESHOLD_",
        )
    }
    description["thread_pools"] = thread_pools()
    description["simd"] = numpy_simd()
    return Numerics.from_json(description)


def numpy_simd() -> list[str] | None:
    """The SIMD targets NumPy dispatches to on this CPU (as this process sees it: under
    Valgrind, the CPU Valgrind presents), or `None` where NumPy does not say."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x keeps it under numpy.core
        try:
            from numpy.core import _multiarray_umath as umath
        except ImportError:
            return None
    features = getattr(umath, "__cpu_features__", None)
    dispatch = getattr(umath, "__cpu_dispatch__", None)
    if not isinstance(features, dict) or dispatch is None:
        return None
    return [str(target) for target in dispatch if features.get(target)]


#: What of threadpoolctl's description of a pool the result keeps (not its file path).
THREAD_POOL_KEYS = (
    "user_api",
    "internal_api",
    "version",
    "architecture",
    "threading_layer",
    "num_threads",
    "prefix",
)


def thread_pools() -> list[dict[str, Any]]:
    """The native thread pools loaded now (the BLAS, OpenMP), as threadpoolctl sees them:
    which library, and which kernel it chose for this CPU; empty if it cannot tell."""
    try:
        from threadpoolctl import threadpool_info

        pools = threadpool_info()
    except Exception:  # optional fact: an unknown library must not fail a grade
        return []
    return [
        {
            key: (str(pool[key]) if key != "num_threads" else pool[key])
            for key in THREAD_POOL_KEYS
            if pool.get(key) is not None
        }
        for pool in pools
    ]


def train(arguments: WorkerCommand, events: EventStream) -> int:
    """Loads, lowers, warms up, trains and reports; returns the exit status."""
    from topos.training import Training
    from topos.training.object_arenas import carve_object_arenas
    from topos.training.resident_bytes import mmap_threshold
    from topos.workloads import resolve

    count_own_frames_as_machinery()

    workload = resolve(arguments.workload)
    if getattr(workload, "framework", None):
        # A step written in PyTorch itself: its routes are variants of that step.
        return train_native(workload, arguments, events)
    if is_peer(arguments.route):
        # Any workload offers the peer routes: they need nothing of it but its recording.
        return train_peer(workload, arguments, events)
    if arguments.route not in workload.routes:
        raise WorkloadRouteError(
            f"workload {workload.name!r} has no route {arguments.route!r}; "
            f"its routes are {', '.join(workload.routes)}"
        )
    data = None if arguments.data in (None, "synthetic") else arguments.data
    budget = arguments.budget if arguments.route == "remat" else None
    training = Training(
        workload,
        arguments.route,
        workload.dataset(data),
        arguments.steps,
        budget,
        lowered_schedule=lowered_schedule(arguments),
    )
    # The process holds the images its steps read, not the whole split; the rest is
    # freed before ready, so the memory at ready is what the run needs.
    training.hold_batches()
    dataset = training.dataset
    gc.collect()
    held_seconds = wait_for_turn(events) if arguments.hold else 0.0
    if held_seconds is None:
        return EXIT_ERROR  # the grader let this worker go without a turn
    counter = StepCounter.from_environment()
    # Start-up's free heap chunks must not serve the steps' mapped-size arrays: see
    # free_chunk_reservation (the prediction counts those arrays' pages in the training
    # delta). A counting worker measures no memory, so it leaves the heap as start-up
    # left it: what the reservation takes follows the heap's layout, and so the steps'.
    plugged_bytes = reserve_free_chunks(mmap_threshold()) if counter is None else 0
    if counter is not None:
        events.hold()  # said after the counted steps (`EventStream.hold`)
        # The shard processes fork at the first step: they count their own part of
        # each measured step, dumped under the same label, and the grader adds them.
        training.program.around_shard_step = (counter.begin, counter.end)
    warm_up_times = warm_up(training, arguments.warmup)
    # Settling runs until the resident set stops changing, so how many computations it
    # makes follows the machine; a counting worker measures no memory, and its steps
    # must follow the same history of allocations in every run.
    settling_computations = settle_memory(lambda: training.compute(0)) if counter is None else 0
    program = training.program
    plan = program.plan
    # The warm-up has touched BLAS's per-thread buffers, which should not count; the
    # plans' arenas are what training costs, so they are freed now and counted from
    # step 0. Every shard runs its own copy of the plan at once, so the figures of one
    # plan count once per shard.
    program.release()
    # Reference cycles left by loading and lowering would be collected during the
    # measured steps, and what that frees would hide as much of the step's own memory.
    gc.collect()
    step_memory = training.step_memory()
    step_peak = StepPeak()
    if counter is None:
        # (A counting worker measures no memory: reading /proc inside the step would
        # count a few hundred instructions that follow the digits of the figures read.)
        program.at_peak = step_peak.read
    shards = program.shards
    itemsize = plan.network.dtype.itemsize
    # The steps' Python objects must land in pages resident now: see object_arenas (each
    # shard process carves its own as it marks ready).
    # (Not in a counting worker: how many pools it carves follows start-up's allocations.)
    carved_bytes = carve_object_arenas() if counter is None else 0
    # Shard processes: each child's private memory now is its baseline (the route's
    # memory is this process's resident set plus every child's private memory).
    children_ready = program.mark_ready()
    # What the data's facts cost to read (a fingerprint hashes every byte) is not a step's.
    data_facts = dataset_facts(dataset)
    high_water_source = "proc" if process_memory.reset_high_water() else "sampling"
    # Without /proc (macOS): psutil's reading, and ru_maxrss to tell whether the steps
    # raised the process's peak (`sampled_memory`).
    parent_ready = sampled_memory.resident_bytes()
    step_peak.max_at_ready = sampled_memory.max_resident_bytes()
    ready = ReadyFacts(
        pid=os.getpid(),
        workload=workload.name,
        route=arguments.route,
        steps=arguments.steps,
        dataset=data_facts,
        # After ready: the summary must not seek a floor the lowering did not (seconds of
        # bisection and megabytes of heap, counted in the steps' Δ: 14.7 MiB on a GRU).
        plan=training.summary(seek_floor=False),
        posture=plan.posture,
        shards=shards,
        live_volume=LiveVolume(
            peak_elements=plan.peak * shards,
            peak_bytes=plan.peak * itemsize * shards,
            peak_node=plan.live.peak_node,
            retain_all_elements=plan.retain_all * shards,
            retain_all_bytes=plan.retain_all * itemsize * shards,
            # The static memory plan: the arena (allocated once), the roots' fresh
            # buffers per run, the engine sweep's predicted peak, and their sum.
            arena_bytes=plan.arena_bytes * shards,
            root_bytes=plan.root_bytes * shards,
            backward_peak_bytes=(plan.predicted_training_bytes - plan.arena_bytes - plan.root_bytes)
            * shards,
            plan_training_bytes=plan.predicted_training_bytes * shards,
            # The whole step: the plans, the feeds, the gradients, the update and the
            # optimizer's state (`step_memory` names the parts).
            predicted_training_bytes=step_memory.total,
        ),
        remat=remat_facts(plan, shards),
        step_memory=StepMemoryFacts.from_json(step_memory.to_json()),
        forward_nodes=training.program.forward_nodes,
        gradient_nodes=training.program.gradient_nodes,
        lower_seconds=training.program.lower_seconds,
        planning_seconds=planning_seconds(plan),
        # The first warm-up step's time is the run's first (cold) step; with no warm-up
        # there is none, and the first measured step is the cold one.
        warm_up_seconds=warm_up_times[0] if warm_up_times else None,
        warmup_steps=len(warm_up_times),
        warm_up_step_seconds=warm_up_times,
        held_seconds=held_seconds,
        ready_rss_bytes=None if parent_ready is None else parent_ready + sum(children_ready),
        shard_processes=ShardProcessFacts(
            pids=list(program.shard_process_ids),
            parent_ready_rss_bytes=parent_ready,
            ready_private_bytes=list(children_ready),
        )
        if children_ready
        else None,
        free_chunks_reserved_bytes=plugged_bytes,
        object_pools_carved_bytes=carved_bytes,
        settling_computations=settling_computations,
        high_water_source=high_water_source,
        python=platform.python_version(),
        numerics=blas_description(),
        code=code_facts(arguments.workload),
    )
    events.emit(Ready(ready))
    started = time.perf_counter()
    try:
        return _train_steps(arguments, events, training, step_peak, started)
    finally:
        program.close()


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
        pid=os.getpid(),
        workload=training.workload.name,
        route=arguments.route,
        steps=arguments.steps,
        dataset=data_facts,
        plan=[
            f"peer: {arguments.route} ({training.version}), {training.emitted_nodes} nodes "
            f"emitted, {training.shards} shard{'s' if training.shards != 1 else ''} in one "
            f"program, {_peer_threads(training.threads)}"
        ],
        posture="peer",
        shards=training.shards,
        forward_nodes=training.emitted_nodes,
        lower_seconds=lower_seconds,
        warm_up_seconds=warm_up_times[0] if warm_up_times else None,
        warmup_steps=len(warm_up_times),
        warm_up_step_seconds=warm_up_times,
        held_seconds=held_seconds,
        ready_rss_bytes=ready_rss,
        high_water_source=high_water_source,
        python=platform.python_version(),
        numerics=blas_description(),
        code=code_facts(arguments.workload),
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
    return _train_steps(arguments, events, training, step_peak, time.perf_counter())


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
        pid=os.getpid(),
        workload=workload.name,
        route=arguments.route,
        steps=arguments.steps,
        dataset=data_facts,
        plan=[
            f"native: {workload.framework} {training.version}, "
            f"{route.description or arguments.route}, {_native_threads(workload)}"
        ],
        posture="native",
        shards=1,
        lower_seconds=lower_seconds,
        warm_up_seconds=warm_up_times[0] if warm_up_times else None,
        warmup_steps=len(warm_up_times),
        warm_up_step_seconds=warm_up_times,
        held_seconds=held_seconds,
        ready_rss_bytes=ready_rss,
        high_water_source=high_water_source,
        python=platform.python_version(),
        numerics=blas_description(),
        code=code_facts(arguments.workload),
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
    return _train_steps(arguments, events, training, StepPeak(), time.perf_counter())


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


def _native_threads(workload: Any) -> str:
    """The threads a native route computes on, e.g. `on 1 thread`; JAX's are XLA's own."""
    if workload.framework == "jax":
        return "on XLA's own threads (the process's cores: JAX takes no count)"
    return _peer_threads(workload.threads)


def _peer_threads(threads: int | None) -> str:
    """E.g. `on 1 thread`, or `threads as the process set them`."""
    if threads is None:
        return "threads as the process set them"
    return f"on {threads} thread{'s' if threads != 1 else ''}"


def warm_up(training: Any, steps: int) -> list[float]:
    """Runs `steps` warm-up steps, each thrown away (parameters and batch order untouched,
    see `Training.warm_up`); returns each one's seconds. The steps that follow are
    measured warm, as hyperfine's `--warmup` does for commands."""
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        training.warm_up()
        times.append(time.perf_counter() - began)
    return times


def wait_for_turn(events: EventStream) -> float | None:
    """Says `loaded`, then waits for the grader's `go` line on standard input; returns the
    seconds waited, or None when standard input ends first (the grader has no turn for
    this worker). Everything measured (warm-up, memory, steps) comes after the wait, so
    another worker loading meanwhile touches none of it."""
    events.emit(Loaded())
    began = time.perf_counter()
    line = sys.stdin.buffer.readline()
    return time.perf_counter() - began if line == GO_LINE else None


def _train_steps(
    arguments: WorkerCommand,
    events: EventStream,
    training: Any,
    step_peak: StepPeak,
    started: float,
) -> int:
    """The measured steps, one `step` event each, then `done`."""
    program = training.program
    # CPU time beside wall time: a step its own CPU cannot explain waited for a processor.
    clock = RouteClock(lambda: program.shard_process_ids)
    shard_switches = clock.shard_switches()
    # Under `grade --measure instructions` the grader runs this worker under Valgrind
    # and reads the work of each measured step from callgrind (`step_counter`).
    counter = StepCounter.from_environment()
    for step in range(arguments.steps):
        clock.start()
        began = time.perf_counter()
        if counter is not None:  # the step alone, not the clock's reading of /proc
            counter.begin()
        loss = training.step(step)
        if counter is not None:
            counter.end(step)
        seconds = time.perf_counter() - began
        cpu_seconds, switches = clock.step()
        value = float(loss)
        finite = math.isfinite(value)
        bits = int(loss.view("uint32"))
        events.emit(
            Step(step, value if finite else str(value), bits, seconds, cpu_seconds, switches)
        )
        if not finite:
            events.emit(Nonfinite(step, str(value)))
            events.emit(_done("nonfinite", started, step_peak, program, clock, shard_switches))
            return EXIT_NONFINITE
    if counter is not None:
        counter.finish()
        events.release()
    events.emit(_done("ok", started, step_peak, program, clock, shard_switches))
    return 0


def lowered_schedule(arguments: WorkerCommand) -> str | None:
    """The text of the schedule the grade's planning child chose for remat
    (`--remat-schedule`), or None: the lowering searches here."""
    from topos.errors import GraphError

    if arguments.route != "remat" or arguments.remat_schedule is None:
        return None
    try:
        return Path(arguments.remat_schedule).read_text(encoding="utf-8")
    except OSError as error:
        raise GraphError(
            f"--remat-schedule {arguments.remat_schedule}: {error.strerror or error}"
        ) from None


def planning_seconds(plan: Any) -> float | None:
    """The seconds remat's search took in the grade's planning child, when this plan was
    rebuilt from the schedule it chose; None when the lowering searched here."""
    if getattr(plan, "searched", True):
        return None
    return plan.search_seconds


def remat_facts(plan: Any, shards: int) -> RematFacts | None:
    """A remat plan's budget, planned bytes, floor and recomputations (bytes for every
    shard's plan together, as the live volume's); None for the other routes."""
    budget = getattr(plan, "budget_bytes", None)
    if budget is None:
        return None
    return RematFacts(
        budget_bytes=budget * shards,
        planned_bytes=plan.planned_bytes * shards,
        # Not sought here when the lowering did not need it: see RematFacts.
        floor_bytes=None if plan.sought_floor_bytes is None else plan.sought_floor_bytes * shards,
        unconstrained_bytes=plan.unconstrained_bytes * shards,
        budget_fraction=budget / plan.unconstrained_bytes,
        recomputations=plan.recomputations,
        flops=plan.flops,
        extra_flops=plan.extra_flops,
        extra_flops_fraction=plan.extra_flops_fraction,
    )


def _done(
    status: str,
    started: float,
    step_peak: StepPeak,
    program: Any,
    clock: RouteClock | None = None,
    shard_switches: int | None = None,
) -> Done:
    """The `done` event: training time, and the memory at the end (the peak is the larger
    of VmHWM and VmRSS read at each step's peak, see `step_peak`, plus with shard
    processes each child's largest private memory, read at the end of its computations)."""
    training_seconds = time.perf_counter() - started
    high_water = process_memory.high_water_bytes()
    readings = [value for value in (high_water, step_peak.bytes) if value is not None]
    children = program.shard_process_memory()
    children_peak = sum(peak for _, peak in children)
    if high_water is not None:
        peak = max(readings) + children_peak
    else:  # no /proc: sampled, not exact (the harness marks the run's peak `sampling`)
        sampled = sampled_memory.sampled_peak(
            step_peak.bytes, step_peak.max_at_ready, sampled_memory.max_resident_bytes()
        )
        peak = None if sampled is None else sampled + children_peak
    switches_now = None if clock is None or shard_switches is None else clock.shard_switches()
    return Done(
        status,
        training_seconds=training_seconds,
        peak_rss_bytes=peak,
        end_rss_bytes=sampled_memory.resident_bytes(),
        high_water_bytes=high_water,
        step_peak_rss_bytes=step_peak.bytes,
        shard_processes_peak_private_bytes=[peak for _, peak in children] or None,
        shard_involuntary_switches=None
        if switches_now is None or shard_switches is None
        else max(switches_now - shard_switches, 0),
    )


def error_kind(error: BaseException) -> str:
    """How the grader should classify a failure: bad data, a bad workload, or a crash."""
    from topos.datasets.errors import DataError
    from topos.errors import GraphError, ShapeError
    from topos.workloads import WorkloadNotFoundError

    if isinstance(error, DataError):
        return "data"
    if isinstance(error, (WorkloadNotFoundError, WorkloadRouteError, ShapeError, GraphError)):
        return "workload"
    return "crash"


def where_raised(error: BaseException) -> str:
    """The innermost frame outside topos itself: the user's offending expression."""
    frames = traceback.extract_tb(error.__traceback__)
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    library = (os.path.join(package, "topos") + os.sep, os.path.join(package, "topos_cli") + os.sep)
    for frame in reversed(frames):
        if not frame.filename.startswith(library):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return ""


def die_with_parent() -> None:
    """Asks Linux to kill this process when the grader that started it dies.

    The grader ends its workers itself on Ctrl-C, SIGTERM and timeouts; this
    covers the one end it cannot handle, being killed outright (SIGKILL), so
    even then no worker is left behind. Elsewhere it does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        set_parent_death_signal = 1  # PR_SET_PDEATHSIG
        libc.prctl(set_parent_death_signal, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    # The grader names itself, so a parent that died before the request took effect is
    # told from a grader that is legitimately pid 1 (in a container).
    grader = os.environ.get(GRADER_PID_VARIABLE, "")
    if grader.isdigit() and os.getppid() != int(grader):
        os._exit(EXIT_ERROR)


def main(argv: list[str] | None = None) -> int:
    """Runs the worker; every failure becomes an `error` event and a non-zero exit."""
    from topos.system.signal_witness import witnessed_signals

    events = EventStream()
    arguments = WorkerCommand.parse(sys.argv[1:] if argv is None else argv)
    with witnessed_signals() as signalled:
        try:
            return train(arguments, events)
        except SystemExit:
            raise
        except KeyboardInterrupt as error:
            if signalled():
                raise  # a signal was sent: the worker ends of it, as the grader expects
            # Raised by the workload's own code, no signal sent: a failure like any other.
            return _failed(error, events)
        except BaseException as error:  # the grader must hear about every failure, in one line
            return _failed(error, events)
        finally:
            events.release()  # whatever a counting worker still holds (a non-finite end)


def _failed(error: BaseException, events: EventStream) -> int:
    """Reports `error` as one `error` event (its kind, the user's line when it is theirs)
    and the traceback on stderr; the worker's exit status."""
    where = where_raised(error)
    if isinstance(error, MemoryError):
        # The frames still hold what filled memory; free it so the report can be sent.
        traceback.clear_frames(error.__traceback__)
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    kind = error_kind(error)
    if kind == "crash" and not events.ready:
        from topos.workloads.user_code_error import user_code_error

        # Raised in, or called from, the user's workload code as the route was made
        # ready: theirs, a usage error, not a crash (once training, a failed route).
        mistake = user_code_error(error)
        if mistake is not None:
            kind, message = "workload", mistake
    events.emit(Error(kind, type(error).__name__, message, where))
    traceback.print_exception(error)
    return EXIT_ERROR
