"""Directional finite differences: the slope of a function along one direction, honestly.

`slope(evaluate, step)` estimates phi'(0) for phi(t) = f(x + t d) from evaluations
of phi, each of which also reports a *corner signature*: which side of every corner
(relu at 0, a maximum's tie, a pooling window's winner) the point lies on. The
central difference `(phi(h) - phi(-h)) / 2h` costs two evaluations and is
accurate to O(h^2) — but only while [-h, h] stays on one smooth piece. So:

- both sides keep the base point's signature: the central difference;
- one side crosses a corner: the second-order one-sided difference on the side that
  does not, `(3 phi(0) - 4 phi(-/+h) + phi(-/+2h)) / (-/+2h)` (the base point's
  own piece is the one the derivative rules follow: at an exact tie the rule's
  convention is the base point's signature);
- both sides cross: the step shrinks (by `SHRINK`, up to `ATTEMPTS` times), and
  after that the direction is skipped with the reason.

When one central difference is not enough to decide (it misses a gradient, which a
wrong rule and an ill-chosen step both do), `extrapolated_slope` runs a ladder of steps
from `LADDER_TOP` times the first down to a quarter of it and extrapolates them Ridders'
way (Richardson's table on steps shrinking by `LADDER_RATIO`): its answer comes with the
estimate's *own error*, the disagreement of the table's neighbouring entries, so
roundoff (which grows as the step shrinks) and truncation (which grows with it) are
measured rather than assumed, and a discrepancy is blamed on a rule only when it lies
far beyond that error.

Directions are standard normal draws from the splitmix64 stream (as `init.normal`),
so a check is reproducible from its seed on every machine and NumPy release.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from topos.splitmix64 import SplitMix64

#: The step is this fraction of the point's root-mean-square entry (see `step_size`).
RELATIVE_STEP = 1e-6
#: The smallest entry scale a step is taken relative to (a bias starting at zero).
SCALE_FLOOR = 0.1
#: How much the step shrinks when both sides of it cross a corner, and how often.
SHRINK = 16.0
ATTEMPTS = 3

#: The ladder of `extrapolated_slope`: steps from this multiple of the first, each
#: `LADDER_RATIO` times smaller, down to `LADDER_BOTTOM` times it. It is wide because
#: the sweet spot between roundoff and truncation moves by orders of magnitude: a GRU's
#: recurrent weight whose gradient is 1e-5 of the loss wants steps 1e4 times the first.
LADDER_TOP = 4.0**8
LADDER_BOTTOM = 0.25
LADDER_RATIO = 4.0

#: phi(t) as (value, corner signature); signatures compare with `same_signature`.
Evaluate = Callable[[float], tuple[float, Any]]


@dataclass(frozen=True)
class Slope:
    """An estimate of phi'(0): its value (None when every step crossed corners), how it
    was made (`central`, `forward`, `backward` or `skipped`), the step, and why a
    corner changed the method (empty when none did)."""

    value: float | None
    method: str
    step: float
    evaluations: int
    corner: str = ""


def random_direction(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """A float64 direction of standard normal entries, reproducible from `seed` (Box-Muller
    over the splitmix64 stream; a direction need not be bit-stable across libms)."""
    count = int(np.prod(shape, dtype=np.int64))
    units = SplitMix64(seed).units(2 * count)
    radius = np.sqrt(-2.0 * np.log1p(-units[0::2]))
    return (radius * np.cos(2.0 * np.pi * units[1::2])).reshape(shape)


def step_size(point: np.ndarray, relative: float = RELATIVE_STEP) -> float:
    """The step along a standard normal direction from `point`: `relative` times the
    point's root-mean-square entry (at least `SCALE_FLOOR`), so each entry moves by
    about a millionth of its own size, whatever the parameter's scale."""
    scale = float(np.sqrt(np.mean(np.square(point)))) if point.size else 0.0
    return relative * max(scale, SCALE_FLOOR)


def same_signature(first: Any, second: Any) -> bool:
    """Whether two corner signatures (None, arrays, or tuples of them) are equal."""
    if first is None or second is None:
        return first is second
    if isinstance(first, tuple):
        return len(first) == len(second) and all(
            same_signature(left, right) for left, right in zip(first, second)
        )
    return bool(np.array_equal(first, second))


def slope(
    evaluate: Evaluate,
    step: float,
    base: tuple[float, Any] | None = None,
    describe_corner: Callable[[Any, Any], str] | None = None,
) -> Slope:
    """phi'(0) by central differences, one-sided beside a corner, skipped across two.

    `base` is phi(0) with its signature when the caller already has it;
    `describe_corner(base_signature, other)` names what was crossed.
    """
    evaluations = 0
    if base is None:
        base = evaluate(0.0)
        evaluations += 1
    value, signature = base
    corner = ""
    for _ in range(ATTEMPTS):
        ahead, ahead_signature = evaluate(step)
        behind, behind_signature = evaluate(-step)
        evaluations += 2
        ahead_same = same_signature(signature, ahead_signature)
        behind_same = same_signature(signature, behind_signature)
        if ahead_same and behind_same:
            return Slope((ahead - behind) / (2.0 * step), "central", step, evaluations, corner)
        crossed = ahead_signature if not ahead_same else behind_signature
        corner = describe_corner(signature, crossed) if describe_corner else "a corner"
        if ahead_same != behind_same:
            side = 1.0 if ahead_same else -1.0
            near = ahead if ahead_same else behind
            far, far_signature = evaluate(2.0 * side * step)
            evaluations += 1
            if same_signature(signature, far_signature):
                estimate = (4.0 * near - far - 3.0 * value) / (2.0 * side * step)
                method = "forward" if side > 0 else "backward"
                return Slope(estimate, method, step, evaluations, corner)
        step /= SHRINK
    return Slope(None, "skipped", step * SHRINK, evaluations, corner)


@dataclass(frozen=True)
class Extrapolation:
    """phi'(0) from a ladder of steps: the best estimate, its own error (the table's
    neighbouring entries' disagreement: an honest bound of roundoff and truncation
    together), the steps that entered it, and the evaluations spent (None when every
    step crossed corners)."""

    value: float | None
    error: float
    steps: int
    evaluations: int
    corner: str = ""


def extrapolated_slope(
    evaluate: Evaluate,
    step: float,
    base: tuple[float, Any] | None = None,
    describe_corner: Callable[[Any, Any], str] | None = None,
    noise: float = 0.0,
) -> Extrapolation:
    """phi'(0) by Ridders' extrapolation over steps from `LADDER_TOP * step`, each
    `LADDER_RATIO` times smaller, down to `LADDER_BOTTOM * step`, with the estimate's own error.

    Each rung is `slope` at that step (central, or one-sided beside a corner; a rung
    that crossed corners on both sides is left out). Richardson's table removes the
    step's even powers rung by rung; the entry whose disagreement with its neighbours
    (the same order one rung up, one order lower) is least is the answer, and that
    disagreement its error — but never less than `noise / step` (`noise`: how far the
    function's own evaluation may be off), since at small steps two central differences
    can agree exactly by roundoff's quantization and so claim an error of zero.
    """
    evaluations = 0
    corner = ""
    column: list[float] = []  # the table's previous row
    best, best_error, used = None, float("inf"), 0
    rungs = round(float(np.log(LADDER_TOP / LADDER_BOTTOM) / np.log(LADDER_RATIO))) + 1
    for rung_index in range(rungs):
        requested = step * LADDER_TOP / LADDER_RATIO**rung_index
        rung = slope(evaluate, requested, base, describe_corner)
        evaluations += rung.evaluations
        corner = corner or rung.corner
        if rung.value is None or rung.step != requested:
            # a rung that had to shrink is off the ladder's ratio: the table starts anew
            column = []
            continue
        used += 1
        row = [rung.value]
        factor = 1.0
        for j, previous in enumerate(column):
            factor *= LADDER_RATIO**2  # the central difference's error has even powers
            row.append((factor * row[j] - previous) / (factor - 1.0))
            error = max(abs(row[j + 1] - row[j]), abs(row[j + 1] - previous), noise / requested)
            if error <= best_error:
                best, best_error = row[j + 1], error
        column = row
    if best is None and column:  # one usable rung: an estimate without a bound
        best = column[0]
    return Extrapolation(best, best_error, used, evaluations, corner)
