"""Liveness: who consumes each buffer last, which buffers count, and the live profile's shape.

The lifetimes themselves (a view keeps its base alive) are decided by MemoryPlan.

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


def counted(node: Node) -> bool:
    """Whether a node's buffer counts towards the live volume."""
    return node.operation not in UNCOUNTED_KINDS
