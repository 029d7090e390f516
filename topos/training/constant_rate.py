"""ConstantRate: a learning rate that never changes, as a workload's schedule."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConstantRate:
    """`rate` at every step: `Workload(learning_rate=ConstantRate(1e-3), ...)`."""

    rate: float

    def __call__(self, step: int, steps: int) -> float:
        """The learning rate of step `step` of `steps`: always `rate`."""
        return self.rate
