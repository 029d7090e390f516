"""check_gradients: each route's gradient against finite differences, in float64.

The two routes agree bit for bit because they run the same derivative rules, so
parity cannot tell a wrong rule; differences of the loss itself can. For each
parameter `p` and each of K random directions `d` (standard normal entries), the
route's directional derivative `g . d` is compared with the loss's central
difference `(L(p + h d) - L(p - h d)) / 2h` (two forward evaluations; beside a corner
one-sided, see `directional_difference`). The error is relative to the gradient's
norm: with standard normal `d`, `|g' . d - g . d|` is about `|g' - g|`, so an
error of 1e-5 means the gradient is off by about a hundred-thousandth of its size.

`TOLERANCE` is 1e-5: float64 differences with a step of a millionth of each
entry's size land around 1e-8 to 1e-7 on the built-in workloads, while a wrong rule
(a dropped factor, a wrong axis, a transposed product) is off by a fraction of one.
When a direction misses it, one central difference is not evidence enough: its step
may be too small for a parameter whose slope is small beside the loss (roundoff) or
too large for a curved one (truncation). The direction is estimated again by Ridders'
extrapolation over a ladder of steps (`extrapolated_slope`), which reports the
estimate's own error. A route is *wrong* along a direction only when its discrepancy
exceeds the tolerance and `ACCUSE` times that error; a discrepancy the estimate's own
error can explain makes the parameter *inconclusive*, with the reason, not wrong.
A parameter's first wrong direction ends its check.

When a gradient is wrong (or a route raises), every rule on the way is checked on
its own (`rule_check`), which names the primitive at fault.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from topos.checking.check_findings import GradientCheck, ParameterCheck
from topos.checking.corners import corner_name, corner_signature, has_corners
from topos.checking.directional_difference import (
    extrapolated_slope,
    random_direction,
    slope,
    step_size,
)
from topos.checking.rule_check import check_rules
from topos.graph.parameters import Parameters
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.tensor import Tensor

ROUTES = ("engine", "recorded", "remat")
TOLERANCE = 1e-5
DIRECTIONS = 3
#: Slopes below this many units of roundoff in the loss, over the step, are noise.
NOISE = 1e-13
#: How far one float64 evaluation of the loss may be off, relative to the loss: the
#: least error a central difference's numerator carries (16 units of roundoff).
ROUNDOFF = 16 * float(np.finfo(np.float64).eps)
#: A discrepancy accuses a rule only beyond this many times the finite differences'
#: own error (Ridders' error is an estimate, not a bound: a margin keeps it honest).
ACCUSE = 10.0


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def check_gradients(
    tape: Tape,
    loss: Symbol,
    parameters: Sequence[Symbol],
    feeds: Mapping[Symbol, np.ndarray | Tensor],
    *,
    routes: Sequence[str] = ROUTES,
    directions: int = DIRECTIONS,
    seed: int = 0,
    tolerance: float = TOLERANCE,
) -> GradientCheck:
    """Checks each route's gradient of `loss` for `parameters` on one batch of `feeds`.

    `tape` must be open and record in float64; it is differentiated (for `recorded`
    and `remat`, which is checked at its floor, where it recomputes the most) and
    sealed here. On a wrong gradient the rules are checked node by node.
    """
    started = time.perf_counter()
    if tape.dtype != np.float64:
        raise TypeError(f"check_gradients: the tape records {tape.dtype}; check in float64")
    unknown = [route for route in routes if route not in ROUTES]
    if unknown:
        raise ValueError(f"unknown route {unknown[0]!r}; routes are {', '.join(ROUTES)}")
    route_errors: dict[str, str] = {}
    adjoints = None
    recording = [route for route in ("recorded", "remat") if route in routes]
    if recording:
        try:
            adjoints = tape.differentiate(loss, parameters)
        except Exception as error:  # a broken rule may raise while it is recorded
            for route in recording:
                route_errors[route] = _describe(error)
    network = tape.into_network()
    nodes = network.nodes
    wrt = [network.index(symbol) for symbol in parameters]
    target = network.index(loss)
    start = network.parameters()
    plan = network.entry([loss]).backward().lower()
    run = plan.forward(start, feeds)
    base_loss = float(run.of(loss).scalar())
    values = {i: np.array(run.of(network.symbol(i)).numpy()) for i in plan.evaluated}

    gradients: dict[str, dict[int, np.ndarray]] = {}
    if "engine" in routes:
        try:
            found = run.backward(loss).parameters(start)
            gradients["engine"] = {i: np.array(found.of(network.symbol(i)).numpy()) for i in wrt}
        except Exception as error:
            route_errors["engine"] = _describe(error)
    if adjoints is not None:
        for route in recording:
            try:
                budget = "floor" if route == "remat" else None
                lowered = network.entry(adjoints.roots()).lower(budget)
                found = lowered.forward(start, feeds).recorded_gradients(adjoints)
                gradients[route] = {i: np.array(found.of(network.symbol(i)).numpy()) for i in wrt}
            except Exception as error:
                route_errors[route] = _describe(error)

    for route, found in list(gradients.items()):
        for i, gradient in found.items():
            if gradient.shape != nodes[i].shape.extents:
                route_errors[route] = (
                    f"the gradient of %{i} has shape {list(gradient.shape)}, "
                    f"the parameter {list(nodes[i].shape.extents)}"
                )
                del gradients[route]
                break
    payloads = {network.index(symbol): tensor for symbol, tensor in start.items()}
    corners = [i for i in plan.evaluated if has_corners(nodes[i].operation)]
    checks = []
    for index in wrt:
        depends = _descendants(nodes, index)
        watched = [k for k in corners if depends[k]]
        point = payloads[index].numpy()

        def describe(base, other, watched=watched) -> str:
            for k, left, right in zip(watched, base, other):
                if not np.array_equal(left, right):
                    where = f" ({nodes[k].source})" if nodes[k].source else ""
                    return f"{corner_name(nodes[k].operation)} at %{k}{where}"
            return "a corner"

        base = (base_loss, _signatures(nodes, values.__getitem__, watched))
        check = ParameterCheck(
            name=nodes[index].attributes.get("name"),
            index=index,
            shape=tuple(point.shape),
            source=str(nodes[index].source or ""),
            norms={r: float(np.linalg.norm(g[index])) for r, g in gradients.items()},
            errors={r: None for r in routes},
            directions=0,
        )
        for draw in range(directions):
            direction = random_direction(seed * 1_000_003 + index * 1009 + draw, point.shape)
            step = step_size(point)
            evaluate = _loss_along(plan, payloads, feeds, loss, index, direction, watched)
            estimate = slope(evaluate, step, base, describe)
            if estimate.value is None:
                check.skipped.append(
                    f"direction {draw}: crossed {estimate.corner} at every step down to "
                    f"{estimate.step:.2g}"
                )
                continue
            check.directions += 1
            check.one_sided += estimate.method != "central"
            errors = _errors(gradients, index, direction, estimate.value, step, base_loss)
            own = dict.fromkeys(errors, 0.0)  # the finite differences' own error, relative
            if max(errors.values(), default=0.0) > tolerance:
                ladder = extrapolated_slope(
                    evaluate, step, base, describe, noise=ROUNDOFF * max(abs(base_loss), 1.0)
                )
                if ladder.value is not None:
                    errors = _errors(gradients, index, direction, ladder.value, step, base_loss)
                    own = _errors(
                        gradients, index, direction, ladder.value, step, base_loss, ladder.error
                    )
                else:
                    own = dict.fromkeys(errors, float("inf"))
            own_error = max(own.values(), default=0.0)
            check.estimate_error = max(check.estimate_error, own_error)
            for route, error in errors.items():
                previous = check.errors[route]
                check.errors[route] = error if previous is None else max(previous, error)
            missed = {r: e for r, e in errors.items() if e > tolerance}
            accused = [r for r, e in missed.items() if e > ACCUSE * own[r]]
            if accused:
                check.wrong.update(accused)
                break  # one wrong direction condemns the gradient; the rules say why
            if missed:
                check.inconclusive.append(
                    f"direction {draw}: off by {max(missed.values()):.1e}, within "
                    f"{ACCUSE:g} times the finite differences' own error {own_error:.1e}"
                )
        check.passed = (
            not check.wrong
            and not check.inconclusive
            and all(check.errors[route] is not None for route in gradients)
        )
        checks.append(check)

    gradient_check = GradientCheck(
        tolerance=tolerance,
        routes=tuple(routes),
        loss=base_loss,
        parameters=checks,
        route_errors=route_errors,
    )
    if not gradient_check.gradients_right:
        rules = check_rules(nodes, values, target, wrt, seed=seed, tolerance=tolerance)
        gradient_check.rules, gradient_check.rules_checked, gradient_check.rule_notes = (
            rules.failures,
            rules.checked,
            rules.notes,
        )
    gradient_check.seconds = time.perf_counter() - started
    return gradient_check


def _signatures(nodes, read, indices) -> tuple:
    """The corner signatures of nodes `indices`, their values read by `read(index)`."""
    result = []
    for k in indices:
        node = nodes[k]
        operands = [read(i) for i in node.inputs]
        result.append(corner_signature(node.operation, operands, read(k), node.attributes))
    return tuple(result)


def _loss_along(plan, payloads, feeds, loss, index, direction, watched):
    """phi(t): the loss, and the watched corners' signatures, with parameter `index` moved
    by `t * direction` (every other parameter and the feeds as they are)."""
    network = plan.network
    point = payloads[index].numpy()

    def evaluate(step: float):
        moved = dict(payloads)
        moved[index] = Tensor.adopt(point + step * direction)
        checked = plan.forward(Parameters(network, moved), feeds)

        def read(i):
            return checked.of(network.symbol(i)).numpy()

        return float(checked.of(loss).scalar()), _signatures(network.nodes, read, watched)

    return evaluate


def _descendants(nodes, index: int) -> list[bool]:
    """Which nodes depend on node `index` (itself included)."""
    depends = [False] * len(nodes)
    depends[index] = True
    for k in range(index + 1, len(nodes)):
        depends[k] = any(depends[i] for i in nodes[k].inputs)
    return depends


def _errors(gradients, index, direction, estimate, step, loss, spread=None) -> dict[str, float]:
    """Each route's error along `direction` (or, given `spread`, that spread), relative
    to its gradient's norm (or the slope's own size, or the roundoff floor, when
    larger)."""
    floor = NOISE * max(abs(loss), 1.0) / step
    errors = {}
    for route, found in gradients.items():
        gradient = found[index]
        predicted = float(np.vdot(gradient, direction))
        scale = max(float(np.linalg.norm(gradient)), abs(estimate), floor)
        errors[route] = (abs(estimate - predicted) if spread is None else spread) / scale
    return errors
