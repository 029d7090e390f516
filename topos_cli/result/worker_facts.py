"""What a worker says of its route when it is ready (`ReadyFacts`), and of how its run ended
(`ErrorFacts`, `NonfiniteFacts`): typed, so the worker writes and the harness, the report
and compare read the same named fields. The worker fills them; a result keeps them whole
in each run's facts (`RunFacts.ready`).

Every field an older worker may not send has a default, so older results still load.
"""

from __future__ import annotations

import msgspec

from topos_cli.result.data_facts import DataFacts
from topos_cli.result.result_part import Bytes, Count, ProcessId, Ratio, ResultPart, Seconds


class LiveVolume(ResultPart):
    """The plan's memory, for every shard's plan together: live volume in elements and
    bytes, and the static memory plan (the arena, the roots, the engine sweep's peak)."""

    peak_elements: Count | None = None
    peak_bytes: Bytes | None = None
    peak_node: Count | None = None
    retain_all_elements: Count | None = None
    retain_all_bytes: Bytes | None = None
    arena_bytes: Bytes | None = None
    root_bytes: Bytes | None = None
    backward_peak_bytes: Bytes | None = None
    plan_training_bytes: Bytes | None = None
    #: The whole step's predicted memory (plans, feeds, gradients, update, optimizer state).
    predicted_training_bytes: Bytes | None = None


class RematFacts(ResultPart):
    """A remat plan's budget, planned bytes, floor and recomputations. The floor is None
    when the lowering did not seek it (its budget did not need it: seeking it is a
    bisection of walks, seconds on a GRU, which would delay the route's ready)."""

    budget_bytes: Bytes
    planned_bytes: Bytes
    floor_bytes: Bytes | None
    unconstrained_bytes: Bytes
    budget_fraction: Ratio
    recomputations: Count
    extra_flops_fraction: Ratio
    flops: Count | None = None
    extra_flops: Count | None = None


class StepMemoryFacts(ResultPart):
    """The step's predicted memory by part (`topos.training.StepMemory.to_json`)."""

    parts: dict[str, Bytes] = msgspec.field(default_factory=dict)
    total_bytes: Bytes | None = None
    #: When in the step the parts are all held at once.
    moment: str | None = None
    shards: Count | None = None
    update_in_place: bool | None = None
    optimizer_declared: bool | None = None


class ShardProcessFacts(ResultPart):
    """A route whose shards run in processes of their own: their ids and ready memory."""

    pids: list[ProcessId] = msgspec.field(default_factory=list)
    parent_ready_rss_bytes: Bytes | None = None
    ready_private_bytes: list[Bytes] = msgspec.field(default_factory=list)


class ThreadPoolFacts(ResultPart):
    """One native thread pool loaded in a worker, as threadpoolctl's `threadpool_info` says:
    which library (`internal_api`: openblas, mkl, blis, accelerate...) and which kernel it
    chose for this CPU (`architecture`: Haswell, SkylakeX, NeoverseN1, ...)."""

    user_api: str | None = None
    internal_api: str | None = None
    version: str | None = None
    architecture: str | None = None
    threading_layer: str | None = None
    num_threads: Count | None = None
    prefix: str | None = None


class Numerics(ResultPart):
    """Which NumPy and BLAS a worker computed with, and the environment that steers them."""

    numpy: str | None = None
    #: The BLAS library's name, version and configuration, as NumPy reports them.
    blas: dict[str, str | None] | None = None
    environment: dict[str, str | None] = msgspec.field(default_factory=dict)
    #: The thread pools loaded at run time (threadpoolctl): the BLAS and the kernel it runs.
    thread_pools: list[ThreadPoolFacts] = msgspec.field(default_factory=list)
    #: The SIMD targets NumPy dispatched to (`X86_V3`, `AVX512_SKX`, `ASIMD`, ...), as the
    #: process saw the CPU: under Valgrind, the CPU Valgrind presents.
    simd: list[str] | None = None

    @property
    def blas_kernel(self) -> str | None:
        """E.g. `openblas 0.3.31 Haswell`: the BLAS at run time and the kernel it chose."""
        for pool in self.thread_pools:
            if pool.user_api == "blas":
                words = (pool.internal_api, pool.version, pool.architecture)
                return " ".join(word for word in words if word) or None
        return None


class Float64Facts(ResultPart):
    """A peer's workload trained again in float64 before the peer's worker was ready (in a
    forked copy of it, so none of its figures count it): topos's losses (the recorded
    route) and the peer's own, each with its seconds, or why it is absent. The verdict
    measures float32's own drift against them (`report.verdict.agreement`)."""

    topos_losses: list[float] = msgspec.field(default_factory=list)
    peer_losses: list[float] = msgspec.field(default_factory=list)
    topos_seconds: Seconds | None = None
    peer_seconds: Seconds | None = None
    topos_absent: str | None = None
    peer_absent: str | None = None


class PeerFacts(ResultPart):
    """A peer route's framework and what it was given: its version, the nodes of the
    emitted program, the threads it computed on (None: as the process set them; JAX takes
    no count), at step 0 each parameter's gradient by the peer against topos's
    (relative error of the Euclidean norm of the difference, by parameter name), and the
    float64 trajectories of topos and the peer (`Float64Facts`)."""

    framework: str
    version: str | None = None
    emitted_nodes: Count | None = None
    shards: Count | None = None
    threads: Count | None = None
    dtype: str | None = None
    optimizer: str | None = None
    gradient_errors: dict[str, Ratio] = msgspec.field(default_factory=dict)
    #: The float64 trajectories float32's drift is measured against (None: an older worker).
    float64: Float64Facts | None = None


class PartitionerFacts(ResultPart):
    """One graph of a compiled PyTorch route as its partitioner planned it, in its own
    estimates (`topos.native.partitioner_estimate.PartitionerEstimate`): the saved bytes
    keeping only the inputs (budget 0), with the runtime-optimised cut (budget 1) and as
    chosen under `budget`; the runtime it chose to recompute, and could have, in its
    estimator's `runtime_unit` (None where no knapsack ran)."""

    budget: Ratio
    inputs_bytes: Bytes
    unbudgeted_bytes: Bytes
    saved_bytes: Bytes
    recomputed_runtime: float | None = None
    recomputable_runtime: float | None = None
    runtime_unit: str = "flops"

    @property
    def allowed_bytes(self) -> float:
        """The saved bytes the budget allows, as the partitioner normalises them."""
        span = max(self.unbudgeted_bytes - self.inputs_bytes, 0)
        return self.inputs_bytes + self.budget * span


class NativeFacts(ResultPart):
    """A native workload's route (a step written in PyTorch itself): its framework and
    version, whether it is promised bit-identical to the reference route (`exact`) or
    judged by agreement, and step 0 computed by it and by the reference from the same
    parameters, batch and random state: each parameter's gradient's relative error, the
    parameters whose gradient bits differ, whether the losses' bits agree, and whether
    the random generator's state after the step is the reference's (a checkpoint that
    recomputes dropout without preserving it draws anew). `gradient_errors` are on the
    model's scale (the norm of the difference over `gradient_scale`, the largest
    parameter gradient's norm) where `gradient_scale` is given; an older worker's,
    without it, are each parameter's own relative error.

    The route's step tensors (`step_tensor_bytes`): the peak bytes of the tensors its
    step holds at once beyond the parameters and optimizer state, as the framework
    accounts them (`topos.native.step_tensors`: PyTorch's profiler over step 0's forward
    and backward, XLA's buffer assignment of the compiled step). Resident memory cannot
    see them: the worker keeps glibc's mmap threshold, so what the warm-up steps freed
    stays in the heap, and a measured step's peak RSS above ready is only the heap's
    growth beyond them. None from an older worker, or where it could not be read
    (`step_tensors_unavailable` says why)."""

    framework: str
    reference: str
    exact: bool
    version: str | None = None
    description: str | None = None
    threads: Count | None = None
    gradient_errors: dict[str, Ratio] = msgspec.field(default_factory=dict)
    differing_gradients: list[str] = msgspec.field(default_factory=list)
    step0_loss_identical: bool | None = None
    rng_matches_reference: bool | None = None
    #: A compiled route's graphs as PyTorch's partitioner estimated them (empty for an
    #: eager route, or where it could not be read: `partitioner_unavailable` says why).
    partitioner: list[PartitionerFacts] = msgspec.field(default_factory=list)
    partitioner_unavailable: str | None = None
    gradient_scale: float | None = None
    step_tensor_bytes: Bytes | None = None
    #: `torch.profiler` or `xla buffer assignment`.
    step_tensor_source: str | None = None
    #: What the figure was summed from: a JAX step's `temp`, `output`, `alias` and
    #: `argument` bytes; a PyTorch step's count of memory `events`.
    step_tensor_parts: dict[str, Count] = msgspec.field(default_factory=dict)
    step_tensors_unavailable: str | None = None


class CodeFacts(ResultPart):
    """Which code a worker imported: the workload's module (its name, its file, and the
    directory its top-level package sits in, the entry of the path it was found on) and
    topos (its package's file and version). `topos grade --against` records it for each
    side, so two sides on the same code by accident are seen, and refused."""

    workload_module: str | None = None
    workload_file: str | None = None
    workload_root: str | None = None
    topos_file: str | None = None
    topos_version: str | None = None


class ReadyFacts(ResultPart):
    """Everything a worker says when ready: what it loaded and lowered, its warm-up, its
    memory at ready; the harness reads what it needs of it, the result keeps it whole."""

    pid: ProcessId | None = None
    workload: str | None = None
    route: str | None = None
    steps: Count | None = None
    dataset: DataFacts | None = None
    #: The plan's summary lines, as `describe()` ends.
    plan: list[str] = msgspec.field(default_factory=list)
    posture: str | None = None
    shards: Count | None = None
    live_volume: LiveVolume | None = None
    remat: RematFacts | None = None
    step_memory: StepMemoryFacts | None = None
    forward_nodes: Count | None = None
    gradient_nodes: Count | None = None
    lower_seconds: Seconds | None = None
    #: Remat's search, when it ran in the grade's planning child before any worker and
    #: this worker rebuilt the plan it chose (`lower_seconds` is the rebuilding): the
    #: child's seconds. None: the worker's lowering searched, within `lower_seconds`.
    planning_seconds: Seconds | None = None
    warm_up_seconds: Seconds | None = None
    #: Steps run and thrown away before the measured ones (`--warmup`).
    warmup_steps: Count | None = None
    #: Each warm-up step's time, in order.
    warm_up_step_seconds: list[Seconds] = msgspec.field(default_factory=list)
    held_seconds: Seconds | None = None
    ready_rss_bytes: Bytes | None = None
    shard_processes: ShardProcessFacts | None = None
    free_chunks_reserved_bytes: Bytes | None = None
    object_pools_carved_bytes: Bytes | None = None
    settling_computations: Count | None = None
    #: `proc` when the worker reset and reads the kernel's high-water mark, else `sampling`.
    high_water_source: str | None = None
    python: str | None = None
    numerics: Numerics | None = None
    #: A peer route's framework and its gradients at step 0 against topos's.
    peer: PeerFacts | None = None
    #: Which code the worker imported: the workload's module and topos.
    code: CodeFacts | None = None
    #: A native workload's route (PyTorch's own step) and its step 0 against the reference.
    native: NativeFacts | None = None

    @property
    def shard_process_ids(self) -> list[int]:
        """The worker's shard processes (empty when its shards run on threads)."""
        return [] if self.shard_processes is None else list(self.shard_processes.pids)

    @property
    def reads_high_water(self) -> bool:
        """Whether the worker reset and will read the kernel's high-water mark (`/proc`)."""
        return self.high_water_source == "proc"


class ErrorFacts(ResultPart):
    """A worker's failure in one line: its kind (`data`, `workload`, `crash`), the
    exception's type and message, and the user's offending expression, if any."""

    kind: str
    type: str
    message: str
    where: str = ""


class NonfiniteFacts(ResultPart):
    """The first step whose loss stopped being finite, and that loss as text."""

    step: Count
    loss: str
