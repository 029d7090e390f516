"""PartitionerEstimate: what PyTorch's partitioner itself predicts of a compiled step.

Under `torch.compile`, AOTAutograd's min-cut partitioner
(`torch._functorch.partitioners.min_cut_rematerialization_partition`) chooses which of
the forward pass's values the backward pass keeps, and under
`torch._functorch.config.activation_memory_budget` it trades memory for recomputation:
`choose_saved_values_set` normalises the saved bytes between keeping only the graph's
inputs (budget 0) and its runtime-optimised cut (budget 1), and a knapsack
(`_optimize_runtime_with_given_memory`) picks what to recompute by the runtime its
estimator gives (FLOPs by default). PyTorch logs none of this unless its partitioner
debugging is on, and its only picture (`visualize_memory_budget_pareto`) is that
estimate drawn for every budget; so each of the two functions is wrapped here, in the
worker's process, to keep what they decided: per graph, the bytes at budget 0 and at
budget 1, the bytes the chosen plan saves, and the recomputation the knapsack expected.

Both are private functions of PyTorch: where either is missing (another version), no
estimate is recorded and `unavailable` says why; the compiled step is untouched.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Why no estimate was recorded, once `record_estimates` has found out (None: recording).
_unavailable: list[str] = []
#: Each partitioned graph's estimate, in the order the partitioner ran.
_recorded: list[PartitionerEstimate] = []
#: Whether the partitioner's functions are wrapped in this process (once is enough).
_installed: list[bool] = []


@dataclass
class PartitionerEstimate:
    """One graph as the partitioner planned it, in its own estimates: the saved bytes
    with only the inputs kept (`inputs_bytes`, budget 0), with its runtime-optimised cut
    (`unbudgeted_bytes`, budget 1) and as chosen under `budget` (`saved_bytes`); the
    runtime of what it chose to recompute and of everything it could have
    (`recomputed_runtime`, `recomputable_runtime`, in its estimator's unit `runtime_unit`;
    None where no knapsack ran: budget 0 or 1, or a cut already within the budget)."""

    budget: float
    inputs_bytes: int
    unbudgeted_bytes: int
    saved_bytes: int
    recomputed_runtime: float | None = None
    recomputable_runtime: float | None = None
    runtime_unit: str = "flops"

    @property
    def allowed_bytes(self) -> float:
        """The saved bytes the budget allows: as the partitioner normalises them, the
        inputs' bytes plus `budget` of the way to the unbudgeted cut's."""
        span = max(self.unbudgeted_bytes - self.inputs_bytes, 0)
        return self.inputs_bytes + self.budget * span

    def to_json(self) -> dict[str, Any]:
        """The estimate as plain JSON values."""
        return asdict(self)


def _size(partitioners: Any, nodes: Any) -> int:
    """The bytes of `nodes` as the partitioner counts them (its own `_size_of`)."""
    return int(sum(partitioners._size_of(node) for node in nodes))


def record_estimates() -> None:
    """Wraps the partitioner's choice of saved values and its knapsack (once per process)
    so that every graph compiled from now on leaves its `PartitionerEstimate` in
    `recorded()`; where PyTorch has no such functions, `unavailable()` says so."""
    if _unavailable or _installed:
        return
    try:
        import torch._functorch.config as functorch_config
        import torch._functorch.partitioners as partitioners
    except ImportError as error:  # pragma: no cover - a PyTorch without AOTAutograd
        _unavailable.append(f"no partitioner to ask ({error})")
        return
    needed = ("choose_saved_values_set", "_optimize_runtime_with_given_memory", "_size_of")
    missing = [name for name in needed if not hasattr(partitioners, name)]
    if missing:
        _unavailable.append(
            f"this PyTorch's partitioner has no {', '.join(missing)} to read its estimate from"
        )
        return
    choose = partitioners.choose_saved_values_set
    knapsack = partitioners._optimize_runtime_with_given_memory
    # The knapsack runs inside the choice: what it expected is kept for the choice's record.
    expected: list[tuple[float, float]] = []

    def choosing(joint_graph: Any, node_info: Any, memory_budget: float = 1, **rest: Any) -> Any:
        expected.clear()
        saved = choose(joint_graph, node_info, memory_budget=memory_budget, **rest)
        knapsack_said = list(expected)
        # The unbudgeted cut, asked for again only where the budget changed the choice.
        unbudgeted = (
            saved if memory_budget >= 1 else choose(joint_graph, node_info, memory_budget=1, **rest)
        )
        recomputed = recomputable = None
        if knapsack_said:
            recomputable, kept = knapsack_said[-1]
            recomputed = recomputable - kept
        _recorded.append(
            PartitionerEstimate(
                budget=float(memory_budget),
                inputs_bytes=_size(partitioners, node_info.inputs),
                unbudgeted_bytes=_size(partitioners, unbudgeted),
                saved_bytes=_size(partitioners, saved),
                recomputed_runtime=recomputed,
                recomputable_runtime=recomputable,
                runtime_unit=str(functorch_config.activation_memory_budget_runtime_estimator),
            )
        )
        return saved

    def solving(joint_graph: Any, memory: Any, runtimes: Any, *rest: Any, **named: Any) -> Any:
        answer = knapsack(joint_graph, memory, runtimes, *rest, **named)
        # (expected runtime of what is saved, saved indices, recomputed indices)
        expected.append((float(sum(runtimes)), float(answer[0])))
        return answer

    partitioners.choose_saved_values_set = choosing
    partitioners._optimize_runtime_with_given_memory = solving
    # A graph AOTAutograd's cache already holds is not partitioned again, and would
    # leave no estimate: the cache is off for this process (the worker's alone).
    functorch_config.enable_autograd_cache = False
    _installed.append(True)


def recorded() -> list[PartitionerEstimate]:
    """Every graph's estimate recorded so far in this process."""
    return list(_recorded)


def unavailable() -> str | None:
    """Why no estimate can be recorded in this process, or None."""
    return _unavailable[0] if _unavailable else None
