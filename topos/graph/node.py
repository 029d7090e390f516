"""Node: one recorded operation, its inputs, its inferred shape and its static attributes."""

from __future__ import annotations

from dataclasses import dataclass, is_dataclass
from typing import Any

from topos.graph.source_location import SourceLocation
from topos.ops.primitive import Primitive
from topos.tensor import Shape

SOURCE_KINDS = ("parameter", "input", "leaf")


@dataclass(eq=False, slots=True)
class Node:
    """A tape entry: a source (`parameter`, `input`, `leaf`) or a primitive applied to inputs."""

    operation: str
    primitive: Primitive | None
    inputs: tuple[int, ...]
    shape: Shape
    attributes: dict[str, Any]
    #: Where the user recorded it (see SourceLocation), so a report can point there.
    source: SourceLocation | None = None

    @property
    def holds_indices(self) -> bool:
        """Whether the node is an index input (integers below `attributes["classes"]`)."""
        return self.primitive is None and "classes" in self.attributes

    @property
    def is_source(self) -> bool:
        """Whether the node holds a payload rather than computing one."""
        return self.primitive is None

    def label(self) -> str:
        """The operation with its attributes, as `describe()` prints it."""
        if not self.attributes:
            return self.operation
        details = ", ".join(_detail(key, value) for key, value in self.attributes.items())
        return f"{self.operation}({details})"


def _detail(key: str, value: Any) -> str:
    """One attribute as a label shows it: `key=value`, but a record (a frozen dataclass
    such as a PatchWindow) names its own fields, so a label reads the same whether
    attributes travel loose or bundled."""
    return str(value) if is_dataclass(value) else f"{key}={value}"
