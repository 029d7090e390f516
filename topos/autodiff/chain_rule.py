"""The reverse sweep both gradient routes share: one function, two algebras.

The engine calls `sweep` with the eager algebra over a run's buffers; `differentiate`
calls it with the recording algebra over the tape's values. Because the schedule,
the seed, the rules and the accumulation order are the same code, the two routes
compute the same kernels on the same inputs in the same order: the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from topos.autodiff.algebra import Algebra
from topos.autodiff.slice_gradients import SliceGradients
from topos.errors import NotDifferentiableError, ShapeError
from topos.graph.node import Node

Schedule = tuple[tuple[int, tuple[bool, ...]], ...]


def backward_schedule(nodes: Sequence[Node], target: int, wrt: Collection[int]) -> Schedule:
    """The nodes the sweep visits, last first, each with which of its inputs need a gradient.

    A node is visited when it is an ancestor of `target` and depends on some node
    of `wrt`; every other node is skipped, so nothing is computed that cannot reach
    a requested gradient.
    """
    if nodes[target].shape.rank != 0:
        raise ShapeError(
            f"backward: target %{target} has shape {nodes[target].shape}; "
            f"only a rank-0 (scalar) target has a gradient to seed"
        )
    depends = [False] * (target + 1)
    wanted = set(wrt)
    for index in range(target + 1):
        node = nodes[index]
        depends[index] = index in wanted or any(depends[i] for i in node.inputs)
    ancestor = [False] * (target + 1)
    ancestor[target] = True
    schedule = []
    for index in range(target, -1, -1):
        if not ancestor[index]:
            continue
        node = nodes[index]
        for input_index in node.inputs:
            ancestor[input_index] = True
        if node.is_source or not depends[index]:
            continue
        needs = tuple(depends[i] for i in node.inputs)
        if any(needs):
            schedule.append((index, needs))
    return tuple(schedule)


def sweep(
    nodes: Sequence[Node],
    schedule: Schedule,
    target: int,
    wrt: Collection[int],
    algebra: Algebra,
    operand: Callable[[int], Any],
    seed: Any,
) -> dict[int, Any]:
    """Runs the chain rule from `seed` at `target`; returns the gradient of each reached
    node of `wrt` (unreached ones are absent: their gradient is zero).

    Contributions to one node accumulate with `add` in the order they arrive:
    consumers last to first, and within a consumer, inputs left to right. A narrow's
    contribution is held as the slice it fills (`SliceGradients`) until the node's
    gradient is read: slices that tile an axis are concatenated, others padded and
    added in the order they arrived.
    """
    kept = set(wrt)
    gradients: dict[int, Any] = {target: seed}
    for index, needs in schedule:
        gradient = gradients.get(index) if index in kept else gradients.pop(index, None)
        node = nodes[index]
        if gradient is None:
            continue
        if type(gradient) is SliceGradients:
            gradient = gradient.assemble(algebra)
            if index in kept:
                gradients[index] = gradient
        if node.operation == "narrow" and node.primitive.derive is not None:
            _hold_slice(gradients, node, algebra, operand(node.inputs[0]), gradient)
            continue
        if node.primitive.derive is None:
            # Declared not differentiable: no zero is invented for it. (A flat function,
            # heaviside or lane_argmax, has a rule that says so by sending nothing.)
            raise not_differentiable(node, index)
        inputs = [operand(i) for i in node.inputs]
        contributions = node.primitive.derive(
            algebra, inputs, operand(index), gradient, needs, **node.attributes
        )
        for input_index, needed, contribution in zip(node.inputs, needs, contributions):
            if not needed or contribution is None:
                continue
            earlier = _read(gradients.get(input_index), algebra)
            gradients[input_index] = (
                contribution if earlier is None else algebra.add(earlier, contribution)
            )
    return {index: _read(gradients[index], algebra) for index in kept if index in gradients}


def _hold_slice(
    gradients: dict[int, Any], node: Node, algebra: Algebra, operand: Any, gradient: Any
) -> None:
    """Adds narrow `node`'s contribution, the `gradient` of its slice of `operand`, to
    its operand's: held beside earlier slices along the same axis; after a gradient
    of another kind (or slices along another axis), added to it padded, as the rule
    does."""
    axis, start = node.attributes["axis"], node.attributes["start"]
    shape = algebra.shape(operand)
    source = node.inputs[0]
    earlier = gradients.get(source)
    if earlier is None:
        earlier = gradients[source] = SliceGradients(axis, shape[axis], shape.rank)
    if type(earlier) is SliceGradients and earlier.accepts(axis, shape[axis]):
        earlier.slices.append((start, gradient))
        return
    held = SliceGradients(axis, shape[axis], shape.rank, [(start, gradient)])
    gradients[source] = algebra.add(_read(earlier, algebra), held.assemble(algebra))


def _read(gradient: Any, algebra: Algebra) -> Any:
    """A gradient as a value: held slices assembled."""
    return gradient.assemble(algebra) if type(gradient) is SliceGradients else gradient


def not_differentiable(node: Node, index: int) -> NotDifferentiableError:
    """The error for a gradient that reached node `index`, whose primitive has no rule."""
    where = ""
    if node.source is not None:
        text = node.source.text()
        where = f", recorded at {node.source}" + (f" ({text})" if text else "")
    declared = (
        "is declared not differentiable"
        if not node.primitive.differentiable
        else "has no derivative rule"
    )
    return NotDifferentiableError(
        f"differentiate: %{index} {node.operation}{where} {declared}, and the gradient "
        f"asked for flows through it; cut it out of the path (feed its result as an "
        f"input) or register a derivative rule",
        node.operation,
        index,
    )
