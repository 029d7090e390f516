"""The extension surface: everything a primitive of one's own is registered with.

A primitive is one operation of the graph, registered from any module (the user's own
included) with the `primitive` decorator: its shape rule, its NumPy kernel, its
derivative rule written against the `Algebra` (so both gradient routes run it, and
train bit-identically), and optionally its memory rules, the examples its derivative is
checked on, where its derivative has corners, and how a peer framework writes it.
Recorded with `tape.record(name, operands, **attributes)`, or as a `Value` method of its
name with `value_method=True`. See docs/reference/extending.md for a worked example.

Importing this module registers the built-in primitives (it imports `topos.ops`).
"""

from __future__ import annotations

import topos.ops  # noqa: F401  (registers the built-in primitives first)
from topos.autodiff.algebra import Algebra
from topos.errors import NotDifferentiableError, RegistrationError
from topos.ops.corner import Corner, own_output, positive_side
from topos.ops.emission import Emission, declare_emission
from topos.ops.example import (
    Example,
    apart,
    away_from_zero,
    distinct,
    normal,
    on_parameters,
    positive,
    record,
    recorded,
)
from topos.ops.memory_rules import ELEMENTWISE, VIEW_ALWAYS, VIEW_WHEN_CONTIGUOUS, MemoryRules
from topos.ops.primitive import (
    REGISTRY,
    Primitive,
    declare_examples,
    lookup,
    primitive,
    same_definition,
)
from topos.ops.shape_rules import broadcast, check_axis, elementwise, fail, replace_axis, same

__all__ = [
    "ELEMENTWISE",
    "REGISTRY",
    "VIEW_ALWAYS",
    "VIEW_WHEN_CONTIGUOUS",
    "Algebra",
    "Corner",
    "Emission",
    "Example",
    "MemoryRules",
    "NotDifferentiableError",
    "Primitive",
    "RegistrationError",
    "apart",
    "away_from_zero",
    "broadcast",
    "check_axis",
    "declare_emission",
    "declare_examples",
    "distinct",
    "elementwise",
    "fail",
    "lookup",
    "normal",
    "on_parameters",
    "own_output",
    "positive",
    "positive_side",
    "primitive",
    "record",
    "recorded",
    "replace_axis",
    "same",
    "same_definition",
]
