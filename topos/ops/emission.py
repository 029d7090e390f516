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
winning lane. Where the peer has a native operation for what a primitive computes, the
rule calls it (a convolution is the peer's convolution, a patch matrix its unfold, a max
pool its max pool, through `xp.convolution`, `xp.patches`, `xp.max_pool`): the peer's
autodiff knows those as whole operations, where a generic gather (and the scatter-add of
its gradient) runs element by element. Operations that only move elements and have no
native form (Winograd's tiles, max_pool_route's placement) may be emitted as one gather
(`xp.take_flat`, or its adjoint `xp.scatter_flat`) through an index map made by running
the primitive's own NumPy kernel on the numbers 1..n, so the element placement is the
kernel's by construction, whatever its layout tricks.

A rule may leave operands unread (`unread=`): a convolution node records its patch matrix
for topos's own derivative, but the peer convolves the images it also records, so the
patches are never emitted unless another node reads them (the rule is given None).

This module imports neither peer: they are imported when a peer route runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The peers a primitive is emitted to.
PEERS = ("torch", "jax")

Rule = Callable[..., Any]


@dataclass(frozen=True)
class Emission:
    """A primitive's emission rules: `rule` for every peer, `torch` / `jax` where one
    is written for that peer alone (it wins over `rule`); `unread`, the positions of the
    operands no rule reads (each is given None)."""

    rule: Rule | None = None
    torch: Rule | None = None
    jax: Rule | None = None
    unread: tuple[int, ...] = ()

    def for_peer(self, peer: str) -> Rule | None:
        """The rule that writes the primitive in `peer` (`torch` or `jax`), or None."""
        if peer not in PEERS:
            raise ValueError(f"no peer is called {peer!r}; peers are {', '.join(PEERS)}")
        own = getattr(self, peer)
        return own if own is not None else self.rule


def declare_emission(
    name: str,
    rule: Rule | None = None,
    *,
    torch: Rule | None = None,
    jax: Rule | None = None,
    unread: tuple[int, ...] = (),
) -> None:
    """Gives primitive `name` its emission rules (see the module); called in the
    primitive's own module, below its registration. `unread` names the operands (by
    position) the rules never read."""
    from topos.ops.primitive import lookup

    if rule is None and torch is None and jax is None:
        raise ValueError(f"{name}: an emission needs a rule")
    registered = lookup(name)
    if any(not 0 <= position < registered.arity for position in unread):
        raise ValueError(f"{name}: unread operands {list(unread)} are not among its operands")
    if registered.emission is not None:
        raise ValueError(f"primitive {name!r} has its emission declared twice")
    registered.emission = Emission(rule, torch, jax, tuple(unread))
