"""The errors topos raises when it is used wrongly, each with a one-line message."""


class ShapeError(ValueError):
    """A recorded expression whose operand shapes do not fit its operation.

    Raised at the expression that caused it, naming the operation and the shapes.
    """


class GraphError(ValueError):
    """A symbol, feed or request that does not fit the network or plan it was given to."""


class BudgetError(GraphError):
    """A memory budget a remat lowering cannot meet: below its floor, the least memory
    any schedule it makes can plan for. The message names the floor in bytes, as do
    `budget_bytes` and `floor_bytes`."""

    def __init__(self, message: str, budget_bytes: int = 0, floor_bytes: int = 0) -> None:
        super().__init__(message)
        self.budget_bytes = budget_bytes
        self.floor_bytes = floor_bytes


class NotDifferentiableError(GraphError):
    """A gradient asked for through a node whose primitive has no derivative rule: one
    declared not differentiable (`differentiable=False`), refused rather than given a
    silent zero. The message names the node, its operation and where it was recorded;
    `operation` and `node` say the same."""

    def __init__(self, message: str, operation: str = "", node: int = -1) -> None:
        super().__init__(message)
        self.operation = operation
        self.node = node


class RegistrationError(ValueError):
    """A primitive that cannot be registered as given: a name taken by another
    definition (without `replace=True`), or no derivative rule without the declaration
    `differentiable=False`."""
