"""Liveness: when each buffer of a plan dies, and how much is live at each step.

Live volume counts the elements a run itself holds: the buffers of computed nodes
and of fed inputs. Parameters (owned by the caller) and leaves (owned by the
network) exist whether or not a plan runs, so they are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topos.graph.node import Node

UNCOUNTED_KINDS = ("parameter", "leaf")


@dataclass(frozen=True)
class LiveProfile:
    """The peak of the live volume (elements), where it happens, and the retain-all total."""

    peak: int
    peak_node: int
    retain_all: int


def last_consumers(nodes: Sequence[Node], evaluated: Sequence[int]) -> dict[int, int]:
    """For each evaluated node that something consumes, the index of its last consumer."""
    last: dict[int, int] = {}
    for index in evaluated:
        for input_index in nodes[index].inputs:
            last[input_index] = index
    return last


def release_points(
    evaluated: Sequence[int], roots: set[int], last: dict[int, int]
) -> dict[int, int]:
    """Forward posture: each non-root buffer dies right after its last consumer
    (or right after itself, when nothing consumes it)."""
    return {index: last.get(index, index) for index in evaluated if index not in roots}


def counted(node: Node) -> bool:
    """Whether a node's buffer counts towards the live volume."""
    return node.operation not in UNCOUNTED_KINDS


def profile(
    nodes: Sequence[Node], evaluated: Sequence[int], releases: dict[int, int]
) -> LiveProfile:
    """Walks the schedule: a buffer is live from its node until its release point."""
    dying: dict[int, list[int]] = {}
    for index, point in releases.items():
        dying.setdefault(point, []).append(index)
    live = peak = total = 0
    peak_node = evaluated[0] if evaluated else 0
    for index in evaluated:
        node = nodes[index]
        if counted(node):
            live += node.shape.volume
            total += node.shape.volume
        if live > peak:
            peak, peak_node = live, index
        for released in dying.get(index, ()):
            if counted(nodes[released]):
                live -= nodes[released].shape.volume
    return LiveProfile(peak, peak_node, total)
