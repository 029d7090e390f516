"""LoweredSchedule: what a remat lowering chose, written down, to rebuild its plan unsearched.

A remat lowering searches (the ladder's walks, the floor's bisection, each schedule's
arena placement) and keeps one schedule. What it keeps is small: the evaluations in
order (each node, the evaluations it reads, whether it recomputes), the budget in
bytes, and the target the chosen schedule's arena was placed for. The placement search
is a pure function of the program and its target (a fixed seed, see `arena`), so a
program laid out again for the same target gets the same offsets: the plan rebuilt
(`Entry.lower_schedule`) is the searched one, the same evaluations into the same
bytes, without the search's seconds or the heap it leaves behind. A schedule names the
graph it was lowered from (`graph_fingerprint`) and is refused by any other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topos.engine.remat_schedule import Evaluation, RematSchedule
from topos.errors import GraphError

if TYPE_CHECKING:
    from topos.graph.network import Network

#: The text's format, should it ever change.
FORMAT = 1


@dataclass(frozen=True)
class LoweredSchedule:
    """A remat lowering's choice (see the module): `graph` (the fingerprint of the network
    and roots it was lowered from), `budget_bytes`, `target` (the bytes the chosen arena
    was placed for; None when nothing is recomputed and the unconstrained plan runs),
    the chosen `schedule`, the floor if the lowering sought it, how many schedules the
    search tried, and the seconds it took."""

    graph: str
    budget_bytes: int
    target: int | None
    schedule: RematSchedule | None
    floor_bytes: int | None
    candidates_tried: int
    seconds: float

    def to_text(self) -> str:
        """The schedule as one JSON object (`from_text` reads it back)."""
        schedule = self.schedule
        return json.dumps(
            {
                "format": FORMAT,
                "graph": self.graph,
                "budget_bytes": self.budget_bytes,
                "target": self.target,
                "floor_bytes": self.floor_bytes,
                "candidates_tried": self.candidates_tried,
                "seconds": self.seconds,
                "schedule": None
                if schedule is None
                else {
                    "simulated_peak": schedule.simulated_peak,
                    "fits": schedule.fits,
                    "evaluations": [
                        [e.node, list(e.inputs), e.recomputation] for e in schedule.evaluations
                    ],
                },
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_text(cls, text: str) -> LoweredSchedule:
        """The schedule `to_text` wrote; GraphError (one line) for anything else."""
        try:
            told = json.loads(text)
            if told.get("format") != FORMAT:
                raise ValueError(f"format {told.get('format')!r}, not {FORMAT}")
            written = told["schedule"]
            schedule = None
            if written is not None:
                evaluations = tuple(
                    Evaluation(int(node), tuple(int(i) for i in inputs), bool(recomputation))
                    for node, inputs, recomputation in written["evaluations"]
                )
                schedule = RematSchedule(
                    evaluations, int(written["simulated_peak"]), bool(written["fits"])
                )
            target = told["target"]
            floor = told["floor_bytes"]
            return cls(
                str(told["graph"]),
                int(told["budget_bytes"]),
                None if target is None else int(target),
                schedule,
                None if floor is None else int(floor),
                int(told["candidates_tried"]),
                float(told["seconds"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise GraphError(f"lower_schedule: not a lowered remat schedule ({error})") from None

    def check(self, network: Network, roots: Sequence[int], evaluated: Sequence[int]) -> None:
        """Refuses (GraphError, one line) a schedule lowered from another graph, or one
        whose evaluations do not compute `evaluated` (the plan's nodes) from their
        operands in order."""
        fingerprint = graph_fingerprint(network, roots)
        if fingerprint != self.graph:
            raise GraphError(
                f"lower_schedule: the schedule was lowered from another graph "
                f"(fingerprint {self.graph[:12]}, this one's {fingerprint[:12]})"
            )
        if self.schedule is None:
            return
        nodes = network.nodes
        seen: set[int] = set()
        for position, evaluation in enumerate(self.schedule.evaluations):
            node = evaluation.node
            reads = evaluation.inputs
            if not 0 <= node < len(nodes) or any(not 0 <= i < position for i in reads):
                raise GraphError(f"lower_schedule: evaluation {position} reads out of order")
            if tuple(self.schedule.evaluations[i].node for i in reads) != nodes[node].inputs:
                raise GraphError(
                    f"lower_schedule: evaluation {position} (node {node}) does not read "
                    f"that node's operands"
                )
            if evaluation.recomputation != (node in seen):
                raise GraphError(
                    f"lower_schedule: evaluation {position} (node {node}) says it "
                    f"{'recomputes' if evaluation.recomputation else 'is first'} wrongly"
                )
            seen.add(node)
        if seen != set(evaluated):
            raise GraphError("lower_schedule: the schedule evaluates other nodes than the plan")


def graph_fingerprint(network: Network, roots: Sequence[int]) -> str:
    """A fingerprint of what a remat lowering reads of a graph: every node's operation,
    shape, operands and attributes, the roots and the dtype."""
    digest = hashlib.sha256()
    digest.update(f"{network.dtype}|{tuple(roots)}".encode())
    for node in network.nodes:
        digest.update(
            f"|{node.operation}{tuple(node.shape)}{node.inputs}{node.attributes!r}".encode()
        )
    return digest.hexdigest()
