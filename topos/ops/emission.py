"""Emission: how a primitive is written in a peer framework (PyTorch, JAX), beside its kernel.

A peer route (`topos grade --routes torch,jax`) runs a workload's recording in another
framework: each node of the forward program becomes the peer's own operations, and the
peer's autodiff and optimizer do the rest. Each primitive says how, once, in its own
module (`declare_emission`, below its examples), as a rule

    rule(xp, *operands, **attributes) -> the peer's array

written against `xp`, a peer namespace (`topos.peers.namespace`): the peer's own array
module for what PyTorch and JAX spell alike (`xp.exp`, `xp.matmul`, `xp.where`, Python's
operators) and a few helpers for what they spell differently (`xp.sum`, `xp.permute`,
`xp.pad`, `xp.take_flat`, ...). A rule that must differ between the peers gives
`torch=` or `jax=` beside (or instead of) the shared one. A fused primitive may be
emitted as its composite: the peer differentiates what it is given.

A rule is written so the peer's autodiff sends gradients where topos's derivative rule
does, corners included: `maximum` is a left-biased `where` (ties send the gradient left),
relu's mask is strict (nothing at 0), a max pool's window sends its gradient to its first
winning lane. Operations that only move elements (im2col's patches, a pad, a fold) may be
emitted as one gather (or its adjoint, one scatter-add) through an index map this module
computes from the primitive's own NumPy kernel (`gather_map`), so the element placement
is the kernel's by construction, whatever its layout tricks.

This module imports NumPy only: the peers are imported when a peer route runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The peers a primitive is emitted to.
PEERS = ("torch", "jax")

Rule = Callable[..., Any]


@dataclass(frozen=True)
class Emission:
    """A primitive's emission rules: `rule` for every peer, `torch` / `jax` where one
    is written for that peer alone (it wins over `rule`)."""

    rule: Rule | None = None
    torch: Rule | None = None
    jax: Rule | None = None

    def for_peer(self, peer: str) -> Rule | None:
        """The rule that writes the primitive in `peer` (`torch` or `jax`), or None."""
        if peer not in PEERS:
            raise ValueError(f"no peer is called {peer!r}; peers are {', '.join(PEERS)}")
        own = getattr(self, peer)
        return own if own is not None else self.rule


def declare_emission(
    name: str, rule: Rule | None = None, *, torch: Rule | None = None, jax: Rule | None = None
) -> None:
    """Gives primitive `name` its emission rules (see the module); called in the
    primitive's own module, below its registration."""
    from topos.ops.primitive import lookup

    if rule is None and torch is None and jax is None:
        raise ValueError(f"{name}: an emission needs a rule")
    registered = lookup(name)
    if registered.emission is not None:
        raise ValueError(f"primitive {name!r} has its emission declared twice")
    registered.emission = Emission(rule, torch, jax)


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


def gather_map(name: str, shapes: tuple[tuple[int, ...], ...], **attributes: Any) -> np.ndarray:
    """Where each output element of primitive `name` over operand 0 of shape `shapes[0]`
    comes from, for a primitive that only moves elements or puts zeros (im2col, pad,
    unfold, gather, ...): an int64 array of the output's shape holding `1 + ` the flat
    index into the operand it copies, or 0 where it puts a zero. Found by running the
    primitive's own kernel on the numbers `1..n` in float64 (exact below 2^53), so the
    placement is the kernel's; cached by shapes and attributes."""
    frozen = tuple(sorted((key, _hashable(value)) for key, value in attributes.items()))
    return _gather_map(name, tuple(tuple(shape) for shape in shapes), frozen)


@functools.lru_cache(maxsize=256)
def _gather_map(name: str, shapes: tuple, attributes: tuple) -> np.ndarray:
    from topos.ops.primitive import lookup

    shape = shapes[0]
    count = int(np.prod(shape, dtype=np.int64))
    numbers = np.arange(1, count + 1, dtype=np.float64).reshape(shape)
    others = [np.zeros(extra, np.float64) for extra in shapes[1:]]
    placed = np.asarray(lookup(name).kernel(numbers, *others, **dict(attributes)))
    mapped = np.rint(placed).astype(np.int64)
    if (
        not np.array_equal(mapped, placed)
        or mapped.min(initial=0) < 0
        or mapped.max(initial=0) > count
    ):
        raise ValueError(f"{name} does more than move elements: it has no gather map")
    mapped.setflags(write=False)
    return mapped
