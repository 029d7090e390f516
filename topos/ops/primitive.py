"""Primitive: one operation's shape rule, NumPy kernel and derivative rule, kept together.

A primitive's derivative rule is written once against an `Algebra`. The engine
runs it with the eager algebra (kernels on arrays); `differentiate` runs the
very same rule with the recording algebra (each operation appends a node whose
kernel is the same kernel). That is what makes the two routes bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from topos.tensor import Shape

ShapeRule = Callable[..., Shape]
Kernel = Callable[..., np.ndarray]
DerivativeRule = Callable[..., Sequence[Any]]

REGISTRY: dict[str, Primitive] = {}


class Primitive:
    """An operation of the graph: how its output shape follows from its inputs'
    (`infer`), how to compute it (`kernel`, pure in its inputs' values and shapes,
    with an optional `out` array to write into), and how to send a gradient back
    to its inputs (`derive`, or None for operations nothing differentiates).
    """

    __slots__ = ("arity", "derive", "infer", "kernel", "name")

    def __init__(
        self,
        name: str,
        arity: int,
        infer: ShapeRule,
        kernel: Kernel,
        derive: DerivativeRule | None,
    ) -> None:
        self.name = name
        self.arity = arity
        self.infer = infer
        self.kernel = kernel
        self.derive = derive

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


def primitive(name: str, arity: int, infer: ShapeRule, derive: DerivativeRule | None):
    """Registers the decorated kernel as primitive `name`, beside its shape and derivative rules."""

    def register(kernel: Kernel) -> Primitive:
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is registered twice")
        registered = Primitive(name, arity, infer, kernel, derive)
        REGISTRY[name] = registered
        return registered

    return register


def lookup(name: str) -> Primitive:
    """The registered primitive called `name`."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"no primitive is called {name!r}") from None
