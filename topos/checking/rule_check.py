"""The node-by-node check: each derivative rule against finite differences of its own
kernel, on the values one batch produced.

A wrong rule makes both gradient routes wrong together, so only this can say which
rule it is. For every node the chain rule visits, the primitive's `derive` runs with
the eager algebra on the node's recorded inputs and output, seeded with a random
weighting `w` of the output (so one scalar, `sum(w * f(inputs))`, stands for the
whole output). Its answer for each operand `u` is then compared, along random
directions `d`, with the directional difference of that scalar when only `u` moves.

Some operands are not free: a `convolution` reads `im2col(images)` beside the
images, and `lane_max` the winners `lane_argmax` found in its own lanes. A rule
says so by sending such an operand nothing; when it also depends on another operand
of the node, it is recomputed from that operand (through the nodes between them)
rather than moved on its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topos.autodiff.chain_rule import backward_schedule
from topos.autodiff.eager_algebra import EagerAlgebra
from topos.checking.check_findings import RuleFailure
from topos.checking.corners import corner_name, corner_signature
from topos.checking.directional_difference import random_direction, slope, step_size
from topos.graph.node import Node

#: A rule passes when every directional slope is within this of finite differences,
#: relative to the larger of its gradient's norm and the difference itself.
RULE_TOLERANCE = 1e-5
#: Finite differences cannot resolve slopes below this many units of roundoff in the
#: weighted output, divided by the step.
NOISE = 1e-13
#: Directions tried per operand, until one is estimated (the others crossed corners).
RULE_DIRECTIONS = 3


class _TracingAlgebra(EagerAlgebra):
    """The eager algebra, noting which operations a rule applies (a report names them:
    a rule can be wrong because a kernel it applies is)."""

    def __init__(self, dtype: Any) -> None:
        super().__init__(dtype)
        self.applied: list[str] = []

    def apply(self, operation: str, operands: Sequence[Any], **attributes: Any) -> Any:
        self.applied.append(operation)
        return super().apply(operation, operands, **attributes)


@dataclass
class RuleFindings:
    """What the node-by-node check found: failures in recording order, how many nodes it
    checked, and notes on operands it could not check."""

    failures: list[RuleFailure] = field(default_factory=list)
    checked: int = 0
    notes: list[str] = field(default_factory=list)


def _ancestors(nodes: Sequence[Node], index: int, cache: dict[int, frozenset[int]]):
    """Every node `index` depends on (not itself)."""
    if index not in cache:
        found: set[int] = set()
        for input_index in nodes[index].inputs:
            found.add(input_index)
            found |= _ancestors(nodes, input_index, cache)
        cache[index] = frozenset(found)
    return cache[index]


def _source(node: Node) -> tuple[str, str]:
    if node.source is None:
        return "", ""
    return str(node.source), node.source.text()


def check_rules(
    nodes: Sequence[Node],
    values: Mapping[int, np.ndarray],
    target: int,
    wrt: Collection[int],
    *,
    seed: int = 0,
    directions: int = RULE_DIRECTIONS,
    tolerance: float = RULE_TOLERANCE,
) -> RuleFindings:
    """Checks the rule of every node the chain rule from `target` to `wrt` visits, on
    `values` (every such node's inputs and output, float64)."""
    findings = RuleFindings()
    cache: dict[int, frozenset[int]] = {}
    schedule = sorted(backward_schedule(nodes, target, wrt))
    for index, needs in schedule:
        node = nodes[index]
        if node.primitive.derive is None:
            # No rule to check against finite differences: the node itself is the
            # culprit (no gradient passes through it), not "no rule at fault".
            source, expression = _source(node)
            declared = "declared not differentiable" if not node.primitive.differentiable else ""
            findings.failures.append(
                RuleFailure(
                    index,
                    node.operation,
                    tuple(tuple(np.shape(values[i])) for i in node.inputs),
                    source,
                    expression,
                    f"has no derivative rule ({declared or 'none registered'}), and the "
                    f"gradient flows through it",
                )
            )
            continue
        findings.checked += 1
        failure = check_rule(
            nodes, values, index, needs, cache, findings.notes, seed, directions, tolerance
        )
        if failure is not None:
            findings.failures.append(failure)
    return findings


def check_rule(
    nodes: Sequence[Node],
    values: Mapping[int, np.ndarray],
    index: int,
    needs: Sequence[bool],
    cache: dict[int, frozenset[int]],
    notes: list[str],
    seed: int,
    directions: int,
    tolerance: float,
) -> RuleFailure | None:
    """One node's rule against finite differences of its kernel; the failure, if any."""
    node = nodes[index]
    primitive = node.primitive
    inputs = [values[i] for i in node.inputs]
    output = values[index]
    source, expression = _source(node)

    def failure(message: str, **details: Any) -> RuleFailure:
        return RuleFailure(
            index,
            node.operation,
            tuple(tuple(np.shape(value)) for value in inputs),
            source,
            expression,
            message,
            applies=tuple(algebra.applied),
            **details,
        )

    weights = random_direction(seed * 7919 + index * 2 + 1, tuple(np.shape(output)))
    algebra = _TracingAlgebra(np.float64)
    try:
        contributions = list(
            primitive.derive(algebra, inputs, output, weights, tuple(needs), **node.attributes)
        )
    except Exception as error:  # a broken rule may raise anything; that names it too
        return failure(f"its rule raised {type(error).__name__}: {error}")
    if len(contributions) != len(inputs):
        return failure(
            f"its rule answered {len(contributions)} gradients for {len(inputs)} operands"
        )
    totals: dict[int, np.ndarray | None] = {}
    for position, (input_index, contribution) in enumerate(zip(node.inputs, contributions)):
        if not needs[position]:
            continue
        if contribution is not None:
            contribution = np.asarray(contribution, dtype=np.float64)
            if contribution.shape != np.shape(inputs[position]):
                return failure(
                    f"its rule gave operand {position} {list(np.shape(inputs[position]))} "
                    f"a gradient of shape {list(contribution.shape)}",
                    operand=position,
                )
        earlier = totals.get(input_index)
        if contribution is None:
            totals.setdefault(input_index, None)
        else:
            totals[input_index] = contribution if earlier is None else earlier + contribution
    distinct = list(dict.fromkeys(i for i, need in zip(node.inputs, needs) if need))
    # An operand the rule sends nothing and that follows from another operand is tied
    # to it: moved with it, never alone.
    tied = {
        i
        for i in distinct
        if totals[i] is None
        and any(other in _ancestors(nodes, i, cache) for other in node.inputs if other != i)
    }
    for position_input in distinct:
        if position_input in tied:
            continue
        found = _check_operand(
            nodes, values, node, index, position_input, totals[position_input], weights, tied,
            cache, seed, directions, tolerance, notes,
        )  # fmt: skip
        if found is not None:
            message, error = found
            position = node.inputs.index(position_input)
            return failure(message, error=error, operand=position)
    return None


def _check_operand(
    nodes, values, node, index, operand, total, weights, tied, cache, seed, directions,
    tolerance, notes,
):  # fmt: skip
    """The rule's slope for moving `operand` against finite differences: a failure
    message and error, or None."""
    following = [t for t in tied if operand in _ancestors(nodes, t, cache)]
    between = sorted(
        {
            k
            for t in following
            for k in (*_ancestors(nodes, t, cache), t)
            if k == t or operand in _ancestors(nodes, k, cache)
        }
        - {operand}
    )
    base_value = values[operand]
    output = values[index]
    roundoff = float(np.sum(np.abs(weights * output)))

    def evaluate(step: float):
        local = {operand: base_value + step * direction}
        signatures = []
        for k in between:
            between_node = nodes[k]
            operands = [local.get(i, values[i]) for i in between_node.inputs]
            local[k] = between_node.primitive.kernel(*operands, **between_node.attributes)
            signatures.append(
                corner_signature(
                    between_node.operation, operands, local[k], between_node.attributes
                )
            )
        operands = [local.get(i, values[i]) for i in node.inputs]
        result = node.primitive.kernel(*operands, **node.attributes)
        signatures.append(corner_signature(node.operation, operands, result, node.attributes))
        return float(np.sum(weights * result)), tuple(signatures)

    def describe(base_signature, other) -> str:
        return f"{corner_name(node.operation)} in %{index}'s operand %{operand}"

    norm = 0.0 if total is None else float(np.linalg.norm(total))
    used = 0
    for number in range(directions):
        direction = random_direction(
            seed * 7919 + index * 1009 + operand * 31 + number, base_value.shape
        )
        step = step_size(base_value)
        estimate = slope(evaluate, step, describe_corner=describe)
        if estimate.value is None:
            continue
        used += 1
        predicted = 0.0 if total is None else float(np.vdot(total, direction))
        floor = NOISE * (roundoff + 1e-300) / estimate.step
        error = abs(estimate.value - predicted) / max(norm, abs(estimate.value), floor)
        if error > tolerance:
            return (
                f"operand {node.inputs.index(operand)} (%{operand}): the rule's slope "
                f"{predicted:.6g} against finite differences {estimate.value:.6g} "
                f"(relative error {error:.2g})",
                error,
            )
        break  # one direction, estimated, suffices: a standard normal one sees every entry
    if used == 0 and directions:
        notes.append(
            f"%{index} {node.operation}: operand %{operand} not checked, every direction "
            f"crossed {corner_name(node.operation)}"
        )
    return None
