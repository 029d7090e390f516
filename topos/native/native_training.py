"""What every native workload's training shares: the seed of a step's random numbers, the
comparison of step 0 with the reference route, and a program without shard processes."""

from __future__ import annotations

from dataclasses import dataclass, field


def step_seed(seed: int, step: int) -> int:
    """The seed of step `step`'s random numbers: the same for every route and every
    step's own, so a warm-up step or a route that draws more cannot shift another's."""
    return (seed * 1_000_003 + step) % (2**63)


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
