"""`--peer-tolerance`: how closely a peer route (torch, jax) must follow topos, as text.

`loss=1e-5,gradient=1e-4` set the step-0 tolerances (the loss's relative difference,
each parameter's gradient's relative error); `drift=10` the factor on float32's own
drift the steps after 0 are judged against (see `report.verdict.agreement`). One bare
value sets both step-0 tolerances.
"""

from __future__ import annotations

import math

import msgspec

from topos_cli.result.verdict_settings import VerdictSettings
from topos_cli.shared.errors import ToposUsageError

#: What `--peer-tolerance` accepts, for help texts and error messages.
SYNTAX = "loss=1e-5,gradient=1e-4,drift=10; one bare value (1e-5) sets loss and gradient"

#: Each key and the verdict setting it sets.
FIELDS = {
    "loss": "peer_loss_tolerance",
    "gradient": "peer_gradient_tolerance",
    "drift": "peer_drift_factor",
}

#: The largest value a setting takes (the result schema's bound on a factor).
LARGEST = 1e6


def _value(text: str, whole: str) -> float:
    """`1e-5` as a float; raises `ToposUsageError` naming `whole` unless it is a finite
    number from 0 to `LARGEST`."""
    value = text.strip()
    try:
        number = float(value)
    except ValueError:
        raise ToposUsageError(f"--peer-tolerance {whole!r}: {value!r} is not a number") from None
    if not math.isfinite(number) or not 0.0 <= number <= LARGEST:
        raise ToposUsageError(
            f"--peer-tolerance {whole!r}: {value!r} is not a number from 0 to {LARGEST:g}"
        )
    return number


def parse_peer_tolerance(text: str | None, base: VerdictSettings | None = None) -> VerdictSettings:
    """The verdict settings `text` asks for (`SYNTAX`), over `base` (the defaults)."""
    settings = base or VerdictSettings()
    if text is None or not text.strip():
        return settings
    items = [item.strip() for item in text.split(",")]
    changes: dict[str, float] = {}
    if len(items) == 1 and "=" not in items[0]:
        value = _value(items[0], text)
        changes = {FIELDS["loss"]: value, FIELDS["gradient"]: value}
    else:
        for item in items:
            key, separator, value = item.partition("=")
            key = key.strip()
            if not separator or key not in FIELDS:
                raise ToposUsageError(f"--peer-tolerance {text!r}: expected {SYNTAX}")
            changes[FIELDS[key]] = _value(value, text)
    return msgspec.structs.replace(settings, **changes)
