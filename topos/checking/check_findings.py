"""The records a gradient check leaves: per parameter, per failing rule, the routes' parity.

Plain data, so the command line can render them as a table and as JSON without
knowing how they were made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ParameterCheck:
    """One parameter against finite differences along random directions.

    `errors[route]` is the largest error over the directions, relative to the
    gradient's norm (None when the route has no gradient to compare); `skipped`
    says which directions crossed corners at every step size, and `one_sided` counts
    those that were estimated beside a corner rather than across it. `wrong` names the
    routes whose discrepancy lies far beyond the finite differences' own error (the
    largest of which, relative, is `estimate_error`); `inconclusive` gives, direction
    by direction, why a miss could not be told from that error.
    """

    index: int
    shape: tuple[int, ...]
    source: str
    norms: dict[str, float]
    errors: dict[str, float | None]
    directions: int
    one_sided: int = 0
    skipped: list[str] = field(default_factory=list)
    passed: bool = True
    name: str | None = None
    wrong: set[str] = field(default_factory=set)
    inconclusive: list[str] = field(default_factory=list)
    estimate_error: float = 0.0

    @property
    def status(self) -> str:
        """`pass`, `FAIL` (a route's gradient is wrong beyond doubt) or `inconclusive`."""
        if self.passed:
            return "pass"
        return "FAIL" if self.wrong or not self.inconclusive else "inconclusive"

    @property
    def label(self) -> str:
        """How reports name the parameter: its recorded name, else `%<node index>`."""
        return self.name or f"%{self.index}"

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-ready data."""
        return {
            "parameter": self.label,
            "shape": list(self.shape),
            "source": self.source,
            "gradient_norm": self.norms,
            "relative_error": self.errors,
            "directions": self.directions,
            "one_sided": self.one_sided,
            "skipped": self.skipped,
            "passed": self.passed,
            "status": self.status,
            "wrong_routes": sorted(self.wrong),
            "inconclusive": self.inconclusive,
            "estimate_error": self.estimate_error,
        }


@dataclass
class RuleFailure:
    """A node whose derivative rule disagrees with finite differences of its own kernel
    (or raised, or answered the wrong number or shapes of gradients)."""

    index: int
    operation: str
    operand_shapes: tuple[tuple[int, ...], ...]
    source: str
    expression: str
    message: str
    error: float | None = None
    operand: int | None = None
    applies: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line: the primitive, its shapes, where it was recorded, and what is wrong."""
        shapes = ", ".join("[" + ", ".join(map(str, shape)) + "]" for shape in self.operand_shapes)
        where = f" at {self.source}" if self.source else ""
        text = f" ({self.expression})" if self.expression else ""
        return f"{self.operation}({shapes}) %{self.index}{where}{text}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-ready data."""
        return {
            "node": f"%{self.index}",
            "primitive": self.operation,
            "operand_shapes": [list(shape) for shape in self.operand_shapes],
            "source": self.source,
            "expression": self.expression,
            "message": self.message,
            "relative_error": self.error,
            "operand": self.operand,
            "rule_applies": list(self.applies),
        }


@dataclass
class ParityCheck:
    """The float32 routes on the same batch: whether their loss and every gradient agree
    bit for bit, and which parameters' gradients do not."""

    routes: tuple[str, ...]
    loss_bits: dict[str, str]
    identical: bool
    differing: list[str] = field(default_factory=list)
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-ready data."""
        return {
            "routes": list(self.routes),
            "loss_bits": self.loss_bits,
            "identical": self.identical,
            "differing_parameters": self.differing,
            "error": self.error or None,
        }


@dataclass
class GradientCheck:
    """Everything one check found: the parameters, the routes that failed outright,
    the failing rules (looked for only when a gradient is wrong), and parity."""

    tolerance: float
    routes: tuple[str, ...]
    loss: float
    parameters: list[ParameterCheck]
    route_errors: dict[str, str] = field(default_factory=dict)
    rules: list[RuleFailure] = field(default_factory=list)
    rules_checked: int = 0
    rule_notes: list[str] = field(default_factory=list)
    parity: ParityCheck | None = None
    seconds: float = 0.0

    @property
    def gradients_right(self) -> bool:
        """Whether no route failed and no gradient was found wrong (a parameter whose
        finite differences could not decide is inconclusive, not wrong)."""
        return not self.route_errors and all(check.status != "FAIL" for check in self.parameters)

    @property
    def undecided(self) -> list[ParameterCheck]:
        """The parameters whose finite differences could not tell right from wrong."""
        return [check for check in self.parameters if check.status == "inconclusive"]

    @property
    def passed(self) -> bool:
        """Gradients right and, when it was checked, float32 parity intact."""
        return self.gradients_right and (self.parity is None or self.parity.identical)

    @property
    def culprit(self) -> RuleFailure | None:
        """The first failing rule in recording order, if one was found."""
        return self.rules[0] if self.rules else None

    def verdict(self) -> str:
        """The one-line verdict."""
        count = len(self.parameters)
        names = list(self.routes)
        routes = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 2 else names)
        if not self.gradients_right:
            wrong = [check.label for check in self.parameters if check.status == "FAIL"]
            what = (
                f"{len(wrong)} of {count} parameters' gradients are wrong ({', '.join(wrong)})"
                if wrong
                else "a route failed: "
                + "; ".join(f"{r}: {e}" for r, e in self.route_errors.items())
            )
            culprit = self.culprit
            if culprit is not None:
                return f"gradients wrong: {what}; first wrong rule: {culprit.describe()}"
            return f"gradients wrong: {what}; no single rule was found at fault"
        undecided = self.undecided
        if undecided:
            names = ", ".join(check.label for check in undecided)
            text = (
                f"no wrong gradient found: {routes} within {self.tolerance:g} of finite "
                f"differences for {count - len(undecided)} of {count} parameters; "
                f"inconclusive for {names} (a discrepancy the finite differences' own "
                "error explains)"
            )
        else:
            text = (
                f"gradients right: {routes} within {self.tolerance:g} of finite differences "
                f"for all {count} parameters"
            )
        if self.parity is not None:
            if self.parity.identical:
                text += "; float32 routes bit-identical"
            else:
                text += "; but the float32 routes are NOT bit-identical"
                if self.parity.differing:
                    text += f" ({', '.join(self.parity.differing)})"
                if self.parity.error:
                    text += f" ({self.parity.error})"
        return text

    def to_json(self) -> dict[str, Any]:
        """The whole check as JSON-ready data."""
        culprit = self.culprit
        return {
            "passed": self.passed,
            "gradients_right": self.gradients_right,
            "verdict": self.verdict(),
            "tolerance": self.tolerance,
            "routes": list(self.routes),
            "loss": self.loss,
            "parameters": [check.to_json() for check in self.parameters],
            "route_errors": self.route_errors,
            "culprit": None if culprit is None else culprit.to_json(),
            "rules": {
                "checked": self.rules_checked,
                "failures": [failure.to_json() for failure in self.rules],
                "notes": self.rule_notes,
            },
            "parity": None if self.parity is None else self.parity.to_json(),
            "seconds": self.seconds,
        }
