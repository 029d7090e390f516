"""ShardWork: what a shard process needs of its route's program, and nothing else.

The shard processes (`shard_processes`) run shards 1.. of a `RouteProgram` in forked
children; they read this record, taken from the program at the fork, rather than the
program itself, so the processes know nothing of how a program is recorded and lowered
(and the program's module is the only one that imports the other).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from topos.engine import Plan, Run
from topos.graph.network import Network
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.graph.symbol import Symbol


@dataclass(frozen=True)
class ShardWork:
    """One program's shards as its shard processes compute them: the sealed `network`,
    one lowered plan per shard (`plans[i]` is shard i's), the `loss` symbol, how a run
    gives the route's `gradients`, the `blas_limit` each child holds while it serves,
    and `around_step` (`before()`, then `after(k)` around the k-th computation after
    ready; None: nothing), as the program had them when the children were forked."""

    network: Network
    plans: Sequence[Plan]
    loss: Symbol
    gradients: Callable[[Run, Parameters], ParameterGradients]
    blas_limit: Callable[[], AbstractContextManager[Any]]
    around_step: tuple[Callable[[], None], Callable[[int], None]] | None

    @property
    def shards(self) -> int:
        """How many shards the batch is split into (the first runs in the parent)."""
        return len(self.plans)
