"""The worker: one route of one workload in one process, speaking the grader's protocol.

`topos_cli.worker.protocol` is its command line and its events. Events go to a private
duplicate of standard output; anything else the process prints goes to
standard error, so it can never garble them.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any

from topos.names import is_peer
from topos.system import process_memory, regular_file
from topos.system.free_chunk_reservation import reserve_free_chunks
from topos_cli import count_own_frames_as_machinery
from topos_cli.result.worker_facts import (
    LiveVolume,
    ReadyFacts,
    RematFacts,
    ShardProcessFacts,
    StepMemoryFacts,
)
from topos_cli.worker import sampled_memory
from topos_cli.worker.event_stream import EventStream
from topos_cli.worker.memory_settling import settle_memory
from topos_cli.worker.native_worker import train_native
from topos_cli.worker.numerics_facts import dataset_facts
from topos_cli.worker.peer_worker import train_peer
from topos_cli.worker.protocol import (
    EXIT_ERROR,
    GRADER_PID_VARIABLE,
    Ready,
    WorkerCommand,
)
from topos_cli.worker.ready_facts import shared_ready_facts
from topos_cli.worker.step_counter import StepCounter
from topos_cli.worker.step_loop import train_steps, wait_for_turn, warm_up
from topos_cli.worker.step_peak import StepPeak
from topos_cli.worker.worker_failure import WorkloadRouteError, report_failure


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
    # Every topos route's worker loads the remat plan's modules (some 115 KiB of code),
    # whether it lowers one or not, so the routes graded side by side hold the same code
    # at ready and differ by what they hold of their plans: loaded by remat alone, they
    # lifted its object arenas' high-water an arena (1 MiB, carved whole before ready)
    # over recorded's in two of three runs of the sequence model template at 100%.
    import topos.engine.remat_plan  # noqa: F401

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
        **shared_ready_facts(
            arguments,
            workload.name,
            data_facts,
            lower_seconds=training.program.lower_seconds,
            warm_up_times=warm_up_times,
            held_seconds=held_seconds,
            ready_rss_bytes=None if parent_ready is None else parent_ready + sum(children_ready),
            high_water_source=high_water_source,
        ),
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
        planning_seconds=planning_seconds(plan),
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
    )
    events.emit(Ready(ready))
    started = time.perf_counter()
    try:
        return train_steps(arguments, events, training, step_peak, started)
    finally:
        program.close()


#: A schedule is a few hundred bytes a node: far more than any graph this can lower.
LARGEST_SCHEDULE_BYTES = 64 * 1024 * 1024


def lowered_schedule(arguments: WorkerCommand) -> str | None:
    """The text of the schedule the grade's planning child chose for remat
    (`--remat-schedule`), or None: the lowering searches here."""
    from topos.errors import GraphError

    if arguments.route != "remat" or arguments.remat_schedule is None:
        return None
    path = arguments.remat_schedule
    try:
        # Read as every file the command reads: a regular file, and no more than a bound.
        with regular_file.open_regular_file(path) as stream:
            data = regular_file.read_at_most(stream, LARGEST_SCHEDULE_BYTES)
    except OSError as error:
        raise GraphError(f"--remat-schedule {path}: {error.strerror or error}") from None
    if len(data) > LARGEST_SCHEDULE_BYTES:
        raise GraphError(
            f"--remat-schedule {path}: over {LARGEST_SCHEDULE_BYTES} bytes, no schedule"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise GraphError(f"--remat-schedule {path}: not UTF-8 text") from None


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
            return report_failure(error, events)
        except BaseException as error:  # the grader must hear about every failure, in one line
            return report_failure(error, events)
        finally:
            events.release()  # whatever a counting worker still holds (a non-finite end)
