"""Two routes' gradients compared on the model's scale: what a peer route's and a native
route's step 0 are judged by (never by each parameter's own size, which calls a correct
gradient of about zero wrong)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


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
