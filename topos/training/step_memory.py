"""StepMemory: what one training step adds to the process at its peak, part by part.

Every part is computed from shapes before the first step. A step (see `Training`)
first *computes*: the whole batch's feeds are made, each shard's plan runs in its
arena (the engine's sweep in a backward arena of its own) and returns fresh roots
and gradients, and with shards their gradients are added into fresh buffers, the
shards' mean. Then it *updates*: the feeds and the shards' own gradients are gone,
and the optimizer writes into the loop's parameters, in place through a small
workspace (`ParameterMemory`), or, for an optimizer without `step_in_place`,
functionally, making new payloads and (we assume, as SGD does) one temporary as
large as the largest parameter. The optimizer's state (Adam's moments) is made by
the first step and kept. The peak is the larger of the two moments; with an update
in place it is always the computing moment, where every part is live at once.

What it cannot see: the workload's own Python objects and any temporaries its
`feeds` function makes beyond the feeds it returns, an optimizer's temporaries
beyond what it declares, memory the allocator keeps for itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from topos.engine.fresh_block import allocation_sizes, block_bytes, pooled
from topos.training.resident_bytes import mmap_threshold, new_bytes, renewed_bytes

if TYPE_CHECKING:
    from topos.training.route_program import RouteProgram

#: The parts, in the order they are shown, with the words people read.
PART_NAMES = {
    "arena": "arena",
    "backward_arena": "backward arena",
    "roots": "roots",
    "gradients": "gradients",
    "feeds": "feeds",
    "shards_mean": "shards' mean",
    "update": "update",
    "optimizer_state": "optimizer state",
}


@dataclass(frozen=True)
class StepMemory:
    """A step's peak memory beyond the process at ready: named parts (bytes, every shard's
    copy counted) at the moment the step holds most, `computing` or `updating`."""

    parts: dict[str, int]
    moment: str
    shards: int
    update_in_place: bool
    optimizer_declared: bool

    @property
    def total(self) -> int:
        """The predicted training delta: the sum of the parts."""
        return sum(self.parts.values())

    def to_json(self) -> dict[str, Any]:
        """The parts, the total and how they were counted, JSON-ready."""
        return {
            "parts": dict(self.parts),
            "total_bytes": self.total,
            "moment": self.moment,
            "shards": self.shards,
            "update_in_place": self.update_in_place,
            "optimizer_declared": self.optimizer_declared,
        }

    def describe(self) -> str:
        """One line: the total, then every part that holds any bytes."""
        shown = " + ".join(
            f"{PART_NAMES[name]} {readable_bytes(size)}"
            for name, size in self.parts.items()
            if size
        )
        return (
            f"step memory: {readable_bytes(self.total)} at its peak, while {self.moment}: "
            f"{shown or 'nothing'}"
        )


def readable_bytes(count: int) -> str:
    """Bytes as `1.5 MiB`, or `12.0 KiB` below a mebibyte."""
    if abs(count) < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def step_memory(
    program: RouteProgram, optimizer: Any, heap_threshold: int | None = None
) -> StepMemory:
    """The parts of a step of `program` trained by `optimizer` (see the module), each
    array placed as malloc places it at `heap_threshold` (`resident_bytes`; the
    process's own setting by default)."""
    plan = program.plan
    network = program.network
    nodes = network.nodes
    itemsize = network.dtype.itemsize
    shards = program.shards

    threshold = mmap_threshold() if heap_threshold is None else heap_threshold

    def size(index: int) -> int:
        return nodes[index].shape.volume * itemsize

    def feed_size(index: int) -> int:
        # An index input is fed as NumPy's index integers, not in the network's dtype.
        if nodes[index].holds_indices:
            return nodes[index].shape.volume * np.dtype(np.intp).itemsize
        return size(index)

    def renewed(sizes) -> int:
        return sum(renewed_bytes(each, threshold) for each in sizes)

    def new(sizes) -> int:
        return sum(new_bytes(each, threshold) for each in sizes)

    backward_arena = 0
    if program.adjoints is not None:
        pairs = [
            (network.index(parameter, "step_memory"), network.index(gradient, "step_memory"))
            for parameter, gradient in program.adjoints
        ]
        trained = [parameter for parameter, _ in pairs]
        returned = {gradient for _, gradient in pairs}
        fresh = sorted(plan.fresh_roots)
        gradients, roots = _fresh_parts(
            [size(index) for index in fresh], [index in returned for index in fresh], renewed
        )
    else:
        loss = network.index(program.recording.loss, "step_memory")
        backward = plan.backward_plan(loss)
        trained = [index for index in network.parameter_indices if plan.evaluates(index)]
        backward_arena = renewed([backward.arena_bytes])
        gradients = renewed(backward.fresh_allocations)
        roots = renewed(allocation_sizes(size(index) for index in plan.fresh_roots))
    trained_sizes = [size(index) for index in trained]
    largest = max((nodes[index].shape.volume for index in trained), default=0)
    inputs = program.recording.inputs.values()
    feeds = renewed(shards * feed_size(network.index(symbol, "step_memory")) for symbol in inputs)
    shards_mean = renewed(allocation_sizes(trained_sizes)) if shards > 1 else 0

    in_place = callable(getattr(optimizer, "step_in_place", None))
    declared = callable(getattr(optimizer, "state_sizes", None))
    # The arrays an optimizer keeps (Adam's moments) appear with the first step.
    state = new(optimizer.state_sizes(trained_sizes)) if declared else 0
    workspace = getattr(optimizer, "workspace_bytes", None)
    plans = {
        "arena": shards * renewed([plan.arena_bytes]),
        "backward_arena": shards * backward_arena,
    }
    computing = {
        **plans,
        "roots": shards * roots,
        "gradients": shards * gradients,
        "feeds": feeds,
        "shards_mean": shards_mean,
        # The workspace is one block past the threshold, resident as far as it is written.
        "update": workspace(network.dtype, largest) if in_place and callable(workspace) else 0,
        "optimizer_state": state,
    }
    if in_place:
        return StepMemory(computing, "computing", shards, True, declared)
    # A functional update: the new payloads and one temporary, while the gradients it
    # reads (the shards' mean, or the one shard's) and the plans' arenas are still held.
    updating = {
        **plans,
        "roots": 0,
        "gradients": 0 if shards > 1 else gradients,
        "feeds": 0,
        "shards_mean": shards_mean,
        "update": new(trained_sizes) + new([max(trained_sizes, default=0)]),
        "optimizer_state": state,
    }
    computing["update"] = 0
    if sum(updating.values()) > sum(computing.values()):
        return StepMemory(updating, "updating", shards, False, declared)
    return StepMemory(computing, "computing", shards, False, declared)


def _fresh_parts(sizes: list[int], returned: list[bool], renewed) -> tuple[int, int]:
    """What a run's fresh roots of `sizes` bytes cost at the peak, as (gradients, roots):
    the small ones share one block (`FreshBlock`), counted with the gradients when it
    holds any, each other root by what it is."""
    block = block_bytes(sizes)
    holds_gradient = any(pooled(size) and gradient for size, gradient in zip(sizes, returned))
    gradients = renewed(s for s, gradient in zip(sizes, returned) if gradient and not pooled(s))
    roots = renewed(s for s, gradient in zip(sizes, returned) if not gradient and not pooled(s))
    if holds_gradient:
        gradients += renewed([block])
    else:
        roots += renewed([block])
    return gradients, roots
