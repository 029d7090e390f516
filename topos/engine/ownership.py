"""Ownership: nothing a caller receives from a plan aliases memory a later kernel writes.

A plan's kernels write only into its arenas (the forward arena, and one backward arena
per target the engine sweeps from) and into fresh buffers they hand out. So a payload
the caller holds (a root, a gradient, a copied-out intermediate) is safe exactly when
it shares no byte with an arena: the next forward or sweep rewrites the arenas, and
nothing ever writes a fresh buffer again. `aliasing` answers which payloads break that
rule; `check_ownership` refuses them with a GraphError. Tests run it over every plan
they build.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from topos.errors import GraphError
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.engine.plan import Plan


def _array(payload: Any) -> np.ndarray:
    return payload.numpy() if isinstance(payload, Tensor) else np.asarray(payload)


def aliasing(plan: Plan, received: Mapping[str, Any]) -> list[str]:
    """The names of the payloads in `received` (Tensors or arrays, by name) whose memory
    overlaps one of `plan`'s arenas."""
    blocks = plan.arena_blocks()
    return [
        name
        for name, payload in received.items()
        if any(np.may_share_memory(_array(payload), block) for block in blocks)
    ]


def check_ownership(plan: Plan, received: Mapping[str, Any]) -> None:
    """Raises GraphError naming every payload in `received` that aliases an arena of
    `plan` (which a later run or sweep would overwrite)."""
    names = aliasing(plan, received)
    if names:
        raise GraphError(
            f"ownership: {', '.join(names)} alias the plan's arena, which a later kernel "
            f"writes; what a plan hands out must be its caller's own memory"
        )
