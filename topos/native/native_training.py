"""What every native workload's training shares: the seed of a step's random numbers, the
comparison of step 0 with the reference route, and a program without shard processes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np


def step_seed(seed: int, step: int) -> int:
    """The seed of step `step`'s random numbers: the same for every route and every
    step's own, so a warm-up step or a route that draws more cannot shift another's."""
    return (seed * 1_000_003 + step) % (2**63)


def gradient_errors_on_model_scale(
    pairs: Iterable[tuple[str, np.ndarray, np.ndarray]],
) -> tuple[dict[str, float], float]:
    """Each parameter's gradient error `|got - wanted| / scale` (Euclidean norms, in
    float64), and the scale: the largest norm of any parameter's wanted gradient. Judged
    on the model's scale, not each parameter's own: a parameter whose true gradient is
    about zero (a convolution's bias feeding a batch norm, which subtracts it right
    back) has a gradient of rounding noise alone, and two correct routes' noises differ
    by as much as they measure, a relative error near 1. Against the model's largest
    gradient that noise is what it is, some 1e-8; a wrong gradient is still of the
    model's own size. Where every wanted gradient is zero the errors are absolute."""
    named = [
        (name, np.asarray(got, np.float64), np.asarray(wanted, np.float64))
        for name, got, wanted in pairs
    ]
    scale = max((float(np.linalg.norm(wanted)) for _, _, wanted in named), default=0.0)
    divisor = scale if scale > 0 else 1.0
    errors = {name: float(np.linalg.norm(got - wanted)) / divisor for name, got, wanted in named}
    return errors, scale


@dataclass
class ReferenceComparison:
    """Step 0 computed by a route and by the reference from the same parameters, batch
    and random state: each parameter's gradient's error on the model's scale (the norm
    of the difference over the largest parameter gradient's norm, `gradient_scale`: see
    `gradient_errors_on_model_scale`), the parameters whose gradient bits differ, whether
    the losses' bits agree, and whether the random generator's state after the step is
    the reference's (None where the framework keeps no such state: JAX's random keys are
    explicit arguments)."""

    gradient_errors: dict[str, float] = field(default_factory=dict)
    gradient_scale: float | None = None
    differing_gradients: list[str] = field(default_factory=list)
    loss_identical: bool = True
    rng_matches_reference: bool | None = True


class NativeProgram:
    """What the step loop asks of a route's program: no shard processes here."""

    @property
    def shard_process_ids(self) -> list[int]:
        return []

    def shard_process_memory(self) -> list[tuple[int, int]]:
        return []

    def close(self) -> None:
        return None
