"""The recorded route's chain rule: the shared sweep run with the recording algebra."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from topos.autodiff.chain_rule import backward_schedule, sweep
from topos.autodiff.recording_algebra import RecordingAlgebra
from topos.graph.adjoints import Adjoints
from topos.graph.symbol import Symbol
from topos.graph.value import Value
from topos.tensor import Shape

if TYPE_CHECKING:
    from topos.graph.tape import Tape


def record_chain_rule(tape: Tape, target: int, wrt: Sequence[int]) -> Adjoints:
    """Appends the gradient of node `target` with respect to each node of `wrt` to `tape`
    as ordinary nodes; a node `target` does not depend on gets a zero leaf."""
    schedule = backward_schedule(tape.nodes, target, wrt)
    recorded = len(tape.nodes)
    algebra = RecordingAlgebra(tape)
    try:
        seed = algebra.constant(1.0, Shape(()))
        gradients = sweep(
            tape.nodes, schedule, target, wrt, algebra, lambda index: Value(tape, index), seed
        )
    except Exception:
        # A refused or broken derivative leaves the tape as it was, not half a chain rule.
        tape.truncate(recorded)
        raise
    pairs = []
    for index in wrt:
        gradient = gradients.get(index)
        if gradient is None:
            gradient = algebra.constant(0.0, tape.nodes[index].shape)
        pairs.append((Symbol(tape.origin, index), gradient.symbol))
    return Adjoints(Symbol(tape.origin, target), pairs)
