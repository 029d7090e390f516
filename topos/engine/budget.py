"""Budget: how much memory a remat lowering may plan for.

What a budget bounds is a plan's planned bytes, the memory a run writes into: its
arena and the fresh buffers of its roots, the gradients among them
(`RematPlan.planned_bytes`), not the rest of a training step (feeds, optimizer state, the
update: `topos.training.step_memory`). It is given
in bytes, as a fraction of the unconstrained forward plan's planned bytes, or as the
floor (the least the lowering can reach). `Budget.of` reads what `Entry.lower(budget=...)` takes:
an int is bytes, a float a fraction, a string as `topos.budget_text` reads it
(`"64MiB"`, `"50%"`, `"floor"`, `"floor+50%"`).
"""

from __future__ import annotations

from dataclasses import dataclass

from topos.budget_text import BudgetTextError, parse_budget
from topos.errors import GraphError


@dataclass(frozen=True)
class Budget:
    """A memory budget: `bytes`, or `fraction` of the unconstrained plan's planned bytes,
    or (neither) the floor."""

    bytes: int | None = None
    fraction: float | None = None
    #: The floor plus this fraction of the way from the floor to the unconstrained plan
    #: (`floor+50%`): a budget that is never below the floor, whatever the graph.
    above_floor: float | None = None
    #: Whether a budget below the floor means the floor instead of an error (what a
    #: default budget, which nobody chose for this graph, should do).
    at_least_floor: bool = False

    @classmethod
    def of(cls, value: Budget | int | float | str) -> Budget:
        """The budget `value` names: a Budget, bytes (int), a fraction (float) or text
        (`"64MiB"`, `"50%"`, `"floor"`); GraphError for anything else, or for a budget
        that is not positive."""
        if isinstance(value, Budget):
            return value
        if isinstance(value, bool):
            raise GraphError(f"budget: {value!r} is not a number of bytes or a fraction")
        if isinstance(value, int):
            if value <= 0:
                raise GraphError(f"budget: {value} bytes is not a positive size")
            return cls(bytes=value)
        if isinstance(value, float):
            if not value > 0 or value == float("inf"):
                raise GraphError(f"budget: the fraction {value} is not a positive number")
            return cls(fraction=value)
        if isinstance(value, str):
            if value.strip().lower() == "floor":
                return cls()
            try:
                parsed = parse_budget(value, name="budget")
            except BudgetTextError as error:
                raise GraphError(str(error)) from None
            if isinstance(parsed, tuple):
                return cls(above_floor=parsed[1])
            return cls.of(parsed)
        raise GraphError(
            f"budget: {value!r} is neither bytes (an int), a fraction of the unconstrained "
            f"plan (a float) nor text such as '64MiB', '50%' or 'floor'"
        )

    @property
    def is_floor(self) -> bool:
        """Whether this budget asks for the floor."""
        return self.bytes is None and self.fraction is None and not self.above_floor

    def bytes_of(self, unconstrained: int, floor: int) -> int:
        """The budget in bytes, given the unconstrained plan's planned bytes and the
        floor's."""
        if self.bytes is not None:
            wanted = self.bytes
        elif self.fraction is not None:
            wanted = int(self.fraction * unconstrained)
        elif self.above_floor is not None:
            return floor + int(self.above_floor * max(0, unconstrained - floor))
        else:
            return floor
        return max(wanted, floor) if self.at_least_floor else wanted

    def __str__(self) -> str:
        if self.bytes is not None:
            text = f"{self.bytes} bytes"
        elif self.fraction is not None:
            text = f"{100 * self.fraction:g}%"
        elif self.above_floor:
            return f"floor+{100 * self.above_floor:g}%"
        else:
            return "floor"
        return f"{text} or the floor" if self.at_least_floor else text
