"""RouteProgram: a workload's model recorded, differentiated (for `recorded`) and lowered.

Everything a route needs that does not depend on data: `topos describe` stops
here, and Training adds a dataset and a batch order on top.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from topos.engine import Plan, Run
from topos.engine.budget import Budget
from topos.engine.entry import Entry
from topos.engine.fresh_block import FreshBlock
from topos.errors import BudgetError, ShapeError
from topos.graph import Adjoints, Network, Symbol, Tape
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.indices import Indices
from topos.tensor import Tensor
from topos.training.blas_buffers import touch_blas_buffers
from topos.training.blas_threads import blas_limit
from topos.training.recording_dtype import record_in_dtype
from topos.training.shard_processes import ShardProcesses, in_processes, require_linux
from topos.training.shard_work import ShardWork
from topos.training.workload import Recording, Workload

#: The remat route's budget when none is given: half the recorded route's planned
#: bytes, or the floor where that is more.
DEFAULT_BUDGET = Budget(fraction=0.5, at_least_floor=True)


class RouteProgram:
    """One route of a workload as lowered plans: one per shard of the batch.

    `engine` lowers `[loss]` in the retain posture and sweeps backward each step;
    `recorded` differentiates on the tape first and lowers one forward-only plan
    over `[loss, gradients...]`; `remat` lowers that plan under `budget` (bytes, a
    fraction of recorded's planned bytes, text such as `"50%"`, or a Budget; by default
    `DEFAULT_BUDGET`), recomputing what it cannot keep, or, given the `lowered_schedule`
    a lowering under that budget chose (`RematPlan.lowered_schedule().to_text()`), rebuilds
    that very plan without searching (GraphError for another graph's). `dtype` is
    float32, or float64 for a workload whose `record` takes a dtype (`recording_dtype`).
    With `shards > 1` the model is recorded for one shard's rows and lowered once, each
    shard running a replica of the plan with an arena of its own, and `compute` runs the
    shards on as many threads, or, with `shard_processes` (by default the workload's;
    None: where the platform can, see `in_processes`), the shards past the first in
    forked children that meet this process through shared memory (`ShardProcesses`,
    Linux only; the same bits). `close()` ends the children.
    """

    def __init__(
        self,
        workload: Workload,
        route: str,
        budget: Budget | int | float | str | None = None,
        shard_processes: bool | None = None,
        dtype: type = np.float32,
        lowered_schedule: str | None = None,
    ) -> None:
        if route not in workload.routes:
            raise ValueError(
                f"unknown route {route!r} for workload {workload.name!r}; "
                f"choose from {', '.join(workload.routes)}"
            )
        self.workload = workload
        self.route = route
        self.shards = workload.shards
        self.rows = workload.batch_size // self.shards
        started = time.perf_counter()
        self.recording: Recording
        if np.dtype(dtype) == np.float32:
            tape = Tape()
            self.recording = workload.record(tape, self.rows)
        else:  # the float64 twin of a peer's grade (see `float64_twin`)
            tape, self.recording = record_in_dtype(workload, self.rows, dtype)
        self.forward_nodes = len(tape)
        self.adjoints: Adjoints | None = None
        self.budget: Budget | None = None
        # What a lowering under this budget chose (`RematPlan.lowered_schedule`, as
        # text): remat's plan is rebuilt from it rather than searched for again.
        self._lowered_schedule = lowered_schedule if route == "remat" else None
        #: The route's budget in bytes as asked (all shards' plans together), or None.
        self._route_budget_bytes: int | None = None
        if route == "remat":
            self.budget = DEFAULT_BUDGET if budget is None else Budget.of(budget)
            self._route_budget_bytes = self.budget.bytes
            if self.budget.bytes is not None:
                # A budget in bytes is the whole route's: each shard's plan gets its share.
                self.budget = replace(self.budget, bytes=max(1, self.budget.bytes // self.shards))
        if route in ("recorded", "remat"):
            self.adjoints = tape.differentiate(self.recording.loss, self.recording.parameters)
        self.gradient_nodes = len(tape) - self.forward_nodes
        self.network: Network = tape.into_network()
        try:
            first = self._lower()
            self.plans: list[Plan] = [first, *(first.replica() for _ in range(1, self.shards))]
        except BudgetError as error:
            if self.shards == 1:
                raise
            # Say it in the whole route's bytes, as every other figure of a route is.
            # The budget as asked, when asked in bytes (the route's, halved per shard).
            asked = self._route_budget_bytes or error.budget_bytes * self.shards
            raise BudgetError(
                f"budget {asked} bytes is below this route's "
                f"floor of {error.floor_bytes * self.shards} bytes ({self.shards} shards, "
                f"each a plan with a floor of {error.floor_bytes} bytes: some kernel's "
                f"operands, output and workspace must be live together, beside the roots)",
                asked,
                error.floor_bytes * self.shards,
            ) from None
        self.plan = self.plans[0]
        #: The state the next step is fed (`Tape.state`: a batch norm's running
        #: statistics), by state input; `commit_state` moves it on by one step.
        self.state: dict[Symbol, Tensor] = {
            symbol: self.network.payloads[symbol.index]
            for symbol in self.network.state_symbols().values()
        }
        self._state_updates = self.network.state_update_symbols()
        self._next_state: dict[Symbol, Tensor] | None = None
        self.lower_seconds = time.perf_counter() - started
        self._threads: ThreadPoolExecutor | None = None
        # Where the shards' mean goes each step (its layouts made once; see `_mean`).
        self._mean_block: FreshBlock | None = None
        #: BLAS threads each shard's step computes on (`blas_threads`; None: as the
        #: process's BLAS is set), and the limit holding them there during `compute`.
        self.blas_threads, self._blas_limit = blas_limit(workload.blas_threads, self.shards)
        #: Whether the shards past the first run in forked processes (see `in_processes`).
        self.shard_processes = in_processes(
            workload.shard_processes if shard_processes is None else shard_processes
        )
        self._processes: ShardProcesses | None = None
        # Called once per `compute` at the moment StepMemory says a step peaks: the
        # feeds, every shard's results and their mean all held (the grader's worker
        # reads the resident set there, see the grader's step peak).
        self.at_peak: Callable[[], None] | None = None
        #: Called in each shard process around each of its computations after ready
        #: (`before()`, then `after(k)` for the k-th): what the grader's instruction
        #: counter needs of the processes it cannot reach (set before the first step,
        #: which forks them).
        self.around_shard_step: tuple[Callable[[], None], Callable[[int], None]] | None = None
        if self.shards > 1:
            if self.shard_processes:
                require_linux()
                self._processes = ShardProcesses(self._shard_work)
            else:
                self._threads = _shard_threads(self.shards - 1)

    def _lower(self) -> Plan:
        # The state's next values are roots too: every route computes them in its
        # forward pass, with the same kernels on the same inputs, so they agree bit for bit.
        if self.adjoints is not None:
            if self._lowered_schedule is not None:
                return self._remat_entry().lower_schedule(self._lowered_schedule)
            return self._remat_entry().lower(self.budget)
        updates = list(self.network.state_update_symbols().values())
        return self.network.entry([self.recording.loss, *updates]).backward().lower()

    def _remat_entry(self) -> Entry:
        """The roots recorded's and remat's plans make readable: the gradients, the loss,
        and the state's next values."""
        updates = list(self.network.state_update_symbols().values())
        return self.network.entry([*self.adjoints.roots(), *updates])

    def summary(self, *, seek_floor: bool = True) -> list[str]:
        """The plan's summary lines (`plan:`, `live volume:`, remat's `budget:`) in the
        route's terms. With shards, every shard runs a replica of one plan, so the plan's
        own lines are labelled each shard's, and remat's `budget:` line is the route's:
        all shards' plans together, the terms a budget in bytes is read in, so a figure
        it prints is a budget the route accepts. With `seek_floor` false, remat's floor
        is said only if its lowering sought it (`RematPlan.summary`)."""
        remat = self.route == "remat"
        lines = self.plan.summary(seek_floor=seek_floor) if remat else self.plan.summary()
        if self.shards == 1:
            return lines
        labelled = []
        for line in lines:
            if line.startswith("budget: "):
                labelled.append("budget per shard: " + line.removeprefix("budget: "))
            else:
                labelled.append(f"{line} (each shard's plan)")
        if remat:
            labelled.append(self._route_budget_line(seek_floor))
        return labelled

    def arena_line(self) -> str:
        """The plan's arena line, labelled each shard's when there are shards."""
        line = self.plan.arena_line()
        if self.shards == 1:
            return line
        return "arena per shard: " + line.removeprefix("arena: ")

    def describe(self) -> str:
        """The plan's `describe()` (a line per node, or per evaluation for remat), its
        summary and arena lines in the route's terms (`summary`, `arena_line`)."""
        lines = self.plan.describe().splitlines()
        kept = len(lines) - len(self.plan.summary()) - 1
        return "\n".join([*lines[:kept], *self.summary(), self.arena_line()])

    def _route_budget_line(self, seek_floor: bool = True) -> str:
        plan, shards = self.plan, self.shards
        budget = self._route_budget_bytes or plan.budget_bytes * shards
        floor = plan.floor_bytes if seek_floor else plan.sought_floor_bytes
        return (
            f"budget: {budget} bytes for the route ({shards} shards' plans together), "
            f"planned {plan.planned_bytes * shards}, floor "
            f"{'not sought' if floor is None else floor * shards}, "
            f"unconstrained {plan.unconstrained_bytes * shards}"
        )

    def remat_plan(self, budget: Budget | int | float | str) -> Plan:
        """The plan remat's route lowers under `budget` (read as the route's: a budget in
        bytes is all shards' plans together, each shard's plan taking its share), from
        this program's recording; BudgetError below the floor. A `recorded` or `remat`
        program's; what tells apart budgets whose plans are the same (`topos frontier`)."""
        if self.adjoints is None:
            raise ValueError("remat_plan: the engine route records no chain rule to lower")
        chosen = Budget.of(budget)
        if chosen.bytes is not None:
            chosen = replace(chosen, bytes=max(1, chosen.bytes // self.shards))
        return self._remat_entry().lower(chosen)

    def _shard_work(self) -> ShardWork:
        """What the shard processes compute, as this program has it now (at their fork)."""
        return ShardWork(
            self.network,
            tuple(self.plans),
            self.recording.loss,
            self.gradients,
            self._blas_limit,
            self.around_shard_step,
        )

    def gradients(self, run: Run, parameters: Parameters) -> ParameterGradients:
        """The route's gradients of a run: swept backward, or read off the roots."""
        if self.adjoints is not None:
            return run.recorded_gradients(self.adjoints)
        return run.backward(self.recording.loss).parameters(parameters)

    def compute(
        self, parameters: Parameters, feeds: Mapping[Symbol, Tensor]
    ) -> tuple[np.floating, ParameterGradients]:
        """The mean loss of a whole batch and its parameters' gradients.

        `feeds` hold the whole batch (rows along axis 0). With shards, shard i
        takes rows `[i*rows, (i+1)*rows)`; the shards' losses and gradients are
        added in shard order, then scaled by 1/shards.
        """
        # Before any shard runs: a missing feed is one error here, not one per shard.
        self.plans[0].require_feeds({**feeds, **self.state})
        if self.shards == 1:
            with self._blas_limit():
                result = self._compute_shard(0, parameters, {**feeds, **self.state})
            self._peak()
            return result
        batch = self.rows * self.shards
        for symbol, tensor in feeds.items():
            if tensor.shape.rank == 0 or tensor.shape[0] != batch:
                raise ShapeError(
                    f"compute: the feed for input %{symbol.index} has shape {tensor.shape}; "
                    f"{self.shards} shards of {self.rows} rows take a batch of {batch} rows"
                )
        pieces = [
            {
                **{symbol: _rows(tensor, shard, self.rows) for symbol, tensor in feeds.items()},
                **self.state,
            }
            for shard in range(self.shards)
        ]
        if self._processes is not None:
            results = self._compute_in_processes(parameters, pieces)
        else:
            results = self._compute_on_threads(parameters, pieces)
        if self._mean_block is None:
            self._mean_block = _mean_block_for(results[0][1])
        mean = _mean(results, self.shards, self.network.origin, self._mean_block)
        self._peak()
        return mean

    def _compute_on_threads(self, parameters: Parameters, pieces: list) -> list[tuple]:
        with self._blas_limit():
            pending = [
                self._threads.submit(self._compute_shard, shard, parameters, pieces[shard])
                for shard in range(1, self.shards)
            ]
            results = [self._compute_shard(0, parameters, pieces[0])]
            results += [future.result() for future in pending]
        return results

    def _compute_in_processes(self, parameters: Parameters, pieces: list) -> list[tuple]:
        processes = self._processes
        processes.submit(parameters, pieces)
        try:
            with self._blas_limit():
                own = self._compute_shard(0, parameters, pieces[0])
        except BaseException:
            processes.drain()
            raise
        return [own, *processes.collect()]

    def touch_blas_buffers(self, parameters: Parameters, feeds: Mapping[Symbol, Tensor]) -> None:
        """Packs every product of a shard into each BLAS buffer the shards can take at once
        (see `blas_buffers`), so the measured steps touch none of them further."""
        if self.shards == 1 or self._processes is not None:
            return  # one BLAS thread a process: each process's own product takes buffer 0
        piece = {symbol: _rows(tensor, 0, self.rows) for symbol, tensor in feeds.items()}
        with self._blas_limit():
            touch_blas_buffers(self.shards, lambda: self._compute_shard(0, parameters, piece))

    def _peak(self) -> None:
        if self.at_peak is not None:
            self.at_peak()

    def _compute_shard(self, shard: int, parameters: Parameters, feeds) -> tuple:
        run = self.plans[shard].forward(parameters, feeds)
        if shard == 0 and self._state_updates:
            # The first shard's statistics carry on, as DistributedDataParallel keeps the
            # first replica's buffers; copied, for the next run reuses its buffers.
            self._next_state = {
                state: _copied(run.of(update)) for state, update in self._state_updates.items()
            }
        return run.of(self.recording.loss).scalar(), self.gradients(run, parameters)

    def commit_state(self) -> None:
        """Moves the state on by the step last computed: the next step is fed the values
        its state updates held (the first shard's). Without state, nothing happens."""
        if self._next_state is not None:
            self.state = self._next_state
            self._next_state = None

    def named_state(self) -> dict[str, Tensor]:
        """The state the next step is fed, by name (`Tape.state`)."""
        return {name: self.state[symbol] for name, symbol in self.network.state_symbols().items()}

    def release(self) -> None:
        """Frees every plan's arena (the next run allocates them again), the shard
        processes' too (they keep running: `close` ends them)."""
        for plan in self.plans:
            plan.release()
        if self._processes is not None:
            self._processes.release()

    def mark_ready(self) -> list[int]:
        """With shard processes: each child's private bytes now, the baseline of its
        training delta (it reads them again at every computation's end from now on);
        else empty."""
        return [] if self._processes is None else self._processes.mark_ready()

    def shard_process_memory(self) -> list[tuple[int, int]]:
        """With shard processes: each child's private bytes at ready and at its largest
        reading since, in shard order; else empty."""
        return [] if self._processes is None else self._processes.memory()

    @property
    def shard_process_ids(self) -> list[int]:
        """The shard processes' ids in shard order (empty on threads or before a step)."""
        return [] if self._processes is None else self._processes.pids

    def close(self) -> None:
        """Ends the shard processes, if any (a later step forks them again)."""
        if self._processes is not None:
            self._processes.close()


def _copied(tensor: Tensor) -> Tensor:
    """A copy of `tensor` no later run writes over."""
    array = tensor.numpy()
    return Tensor(array.shape, array, dtype=array.dtype)


def _rows(feed: Tensor | Indices, shard: int, rows: int) -> Tensor | Indices:
    """Shard `shard`'s rows of a whole-batch feed (a view: rows are contiguous)."""
    if isinstance(feed, Indices):
        return feed.rows(shard * rows, (shard + 1) * rows)
    return Tensor.adopt(feed.numpy()[shard * rows : (shard + 1) * rows])


def _mean(results: list[tuple], shards: int, origin: int, block: FreshBlock) -> tuple:
    """The shards' losses and gradients added in shard order, then scaled by 1/shards,
    into fresh buffers from `block` (`_mean_block_for` the gradients, renewed here)."""
    losses = [loss for loss, _ in results]
    loss = losses[0]
    for other in losses[1:]:
        loss = loss + other
    scale = loss.dtype.type(1.0 / shards)
    first = results[0][1]
    others = [gradients for _, gradients in results[1:]]
    block.renew()
    gradients: dict[int, Tensor] = {}
    for index in first.indices():
        # Fresh buffers the caller keeps, the small ones in one block (see FreshBlock).
        total = block.buffer(index)
        # The first two shards' sum made into the buffer at once (there are at least
        # two): the same addition as a copy of the first with the second added onto it,
        # a pass fewer.
        np.add(first.by_index(index).numpy(), others[0].by_index(index).numpy(), out=total)
        for other in others[1:]:
            total += other.by_index(index).numpy()
        total *= scale
        gradients[index] = Tensor.adopt(total)
    return loss * scale, ParameterGradients(origin, gradients)


def _mean_block_for(gradients: ParameterGradients) -> FreshBlock:
    """The FreshBlock `_mean` makes its buffers in, for gradients shaped as `gradients`
    (C-contiguous): made once a program, renewed each step."""
    arrays = {index: gradients.by_index(index).numpy() for index in gradients.indices()}
    dtype = next(iter(arrays.values())).dtype if arrays else np.float32
    return FreshBlock(
        {index: (array.shape, tuple(range(array.ndim))) for index, array in arrays.items()},
        dtype,
    )


@functools.cache
def _shard_threads(count: int) -> ThreadPoolExecutor:
    """`count` threads for the shards past the first, shared by every program of the
    process (a program computes one step at a time, so they never queue behind
    another program's shards for long)."""
    return ThreadPoolExecutor(count, thread_name_prefix="topos-shard")
