"""Primitive: one operation's shape rule, NumPy kernel and derivative rule, kept together.

A primitive's derivative rule is written once against an `Algebra`. The engine
runs it with the eager algebra (kernels on arrays); `differentiate` runs the
very same rule with the recording algebra (each operation appends a node whose
kernel is the same kernel). That is what makes the two routes bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topos.ops.corner import Corner
from topos.ops.emission import Emission
from topos.ops.example import Example
from topos.ops.memory_rules import MemoryRules
from topos.tensor import Shape

ShapeRule = Callable[..., Shape]
Kernel = Callable[..., np.ndarray]
DerivativeRule = Callable[..., Sequence[Any]]

REGISTRY: dict[str, Primitive] = {}


@dataclass(eq=False, repr=False, slots=True)
class Primitive:
    """An operation of the graph: how its output shape follows from its inputs'
    (`infer`), how to compute it (`kernel`, pure in its inputs' values and shapes,
    with an optional `out` array to write into), and how to send a gradient back
    to its inputs (`derive`, or None for operations nothing differentiates).

    The rest is optional. `memory` is what the static memory plan needs to know about
    the kernel (a view, a memory order, scratch; see `MemoryRules`): left out, the
    defaults. `examples` are the expressions its finite-difference derivative test
    differentiates (see `Example`).

    `index_operands` are the positions of operands that are index inputs (integer
    arrays: an embedding's token ids); every other operand is a float value, and the
    tape refuses to mix them up. An index operand never gets a gradient.

    A primitive with `value_method` is recorded by the `Value` method of its name
    (`x.exp()`, `x.maximum(y)`): its first operand is the Value, the others follow,
    Python numbers among them recorded as rank-0 leaves.

    A primitive whose derivative is not defined everywhere says where (`corner`), so a
    finite-difference check can tell a perturbation that crosses one.

    `emission` says how the primitive is written in the peer frameworks, PyTorch and JAX
    (see `topos.ops.emission`; declared in the primitive's module by `declare_emission`).
    """

    name: str
    arity: int
    infer: ShapeRule
    kernel: Kernel
    derive: DerivativeRule | None
    memory: MemoryRules = field(default_factory=MemoryRules)
    examples: tuple[Example, ...] = ()
    value_method: bool = False
    index_operands: tuple[int, ...] = ()
    corner: Corner | None = None
    emission: Emission | None = None

    def __post_init__(self) -> None:
        self.examples = tuple(self.examples)
        self.index_operands = tuple(self.index_operands)

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


def primitive(
    name: str, arity: int, infer: ShapeRule, derive: DerivativeRule | None, **options: Any
) -> Callable[[Kernel], Primitive]:
    """Registers the decorated kernel as primitive `name`, beside its shape and derivative
    rules; `options` are the rest of `Primitive`'s fields, by name (`memory`, `examples`,
    `value_method`, ...)."""

    def register(kernel: Kernel) -> Primitive:
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is registered twice")
        registered = Primitive(name, arity, infer, kernel, derive, **options)
        REGISTRY[name] = registered
        return registered

    return register


def lookup(name: str) -> Primitive:
    """The registered primitive called `name`."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"no primitive is called {name!r}") from None


def declare_examples(name: str, *examples: Example) -> None:
    """Adds `examples` to primitive `name`'s: what its derivative test differentiates.
    Called in the primitive's own module, below its registration."""
    if not examples:
        raise ValueError(f"{name}: declare at least one example")
    registered = lookup(name)
    registered.examples = registered.examples + tuple(examples)
