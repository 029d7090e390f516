"""EmittedProgram: a recording's forward program, node by node, in a peer framework.

The program keeps the ancestors of its roots (a loss, usually) in recording order, as a
plan does, through the operands the emission rules read (a convolution's rule leaves its
patch matrix unread, so the patches are not emitted unless another node reads them), and
runs each node's emission rule (see `topos.ops.emission`) on the peer's
arrays: the parameters and feeds it is given, the network's leaves as constants, the
inputs it is not fed at their defaults. What comes out is the peer's own computation,
which the peer's autodiff then differentiates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from topos.graph.network import Network
from topos.graph.symbol import Symbol
from topos.peers.namespace import PeerNamespace


class EmittedProgram:
    """The nodes of `network` that `roots` depend on, ready to run in a peer namespace."""

    def __init__(self, network: Network, roots: Iterable[Symbol]) -> None:
        self.network = network
        self.roots = [network.index(root, "emit") for root in roots]
        needed = set(self.roots)
        missing = set()
        for index in range(len(network.nodes) - 1, -1, -1):
            if index in needed:
                node = network.nodes[index]
                if node.primitive is not None and node.primitive.emission is None:
                    missing.add(node.operation)
                needed.update(self._read(index))
        if missing:
            raise NotImplementedError(f"no emission rule for {', '.join(sorted(missing))}")
        #: The evaluated nodes' indices, in recording order.
        self.order = sorted(needed)
        #: Parameters the roots depend on, in recording order.
        self.parameters = [i for i in self.order if network.nodes[i].operation == "parameter"]
        self.inputs = [i for i in self.order if network.nodes[i].operation == "input"]
        #: State inputs (`Tape.state`): fed whole to every shard, not cut into rows.
        self.states = {i for i in self.inputs if "state" in network.nodes[i].attributes}
        # Made here, not on first use: torch.compile guards on the program's attributes,
        # and one set during the first trace would trace the program a second time.
        self._last_use = {operand: index for index in self.order for operand in self._read(index)}

    def constants(self, xp: PeerNamespace) -> dict[int, Any]:
        """The leaves (and unfed inputs' defaults) as the peer's arrays, made once."""
        made = {}
        for index in self.order:
            node = self.network.nodes[index]
            if node.operation in ("leaf", "input"):
                made[index] = _peer_array(xp, self.network.payloads[index])
        return made

    def run(
        self,
        xp: PeerNamespace,
        parameters: Mapping[int, Any],
        feeds: Mapping[int, Any],
        constants: Mapping[int, Any],
    ) -> list[Any]:
        """The roots' values: `parameters` and `feeds` by node index, as the peer's arrays
        (an input not fed takes its default from `constants`)."""
        values: dict[int, Any] = {}
        peer = xp.name
        last_use = self._last_use
        for index in self.order:
            node = self.network.nodes[index]
            if node.operation == "parameter":
                values[index] = parameters[index]
            elif node.operation == "input":
                values[index] = feeds[index] if index in feeds else constants[index]
            elif node.operation == "leaf":
                values[index] = constants[index]
            else:
                emission = node.primitive.emission
                rule = emission.for_peer(peer)
                operands = [
                    None if position in emission.unread else values[operand]
                    for position, operand in enumerate(node.inputs)
                ]
                values[index] = rule(xp, *operands, **node.attributes)
                for operand in set(self._read(index)):
                    if last_use.get(operand) == index and operand not in self.roots:
                        del values[operand]
        return [values[root] for root in self.roots]

    def _read(self, index: int) -> list[int]:
        """The operands of node `index` its emission rule reads (all but the unread)."""
        node = self.network.nodes[index]
        emission = node.primitive.emission if node.primitive is not None else None
        if emission is None or not emission.unread:
            return list(node.inputs)
        return [
            operand
            for position, operand in enumerate(node.inputs)
            if position not in emission.unread
        ]

    def shard_mean(
        self,
        xp: PeerNamespace,
        parameters: Mapping[int, Any],
        feeds: Mapping[int, Any],
        constants: Mapping[int, Any],
        shards: int,
    ) -> tuple[Any, list[Any]]:
        """The loss as topos's shards compute it: the program run on each shard's rows of
        the feeds, the losses summed in shard order and divided by the shard count; and
        the first shard's values of the roots after the loss (the state's next values,
        as topos's routes keep the first shard's). State feeds go whole to every shard."""
        total = None
        rest: list[Any] = []
        for shard in range(shards):
            pieces = {
                index: feed if index in self.states else _rows(feed, shard, shards)
                for index, feed in feeds.items()
            }
            loss, *others = self.run(xp, parameters, pieces, constants)
            total = loss if total is None else total + loss
            if shard == 0:
                rest = others
        if shards == 1:
            return total, rest
        return total * (1.0 / shards), rest


def _rows(feed: Any, shard: int, shards: int) -> Any:
    """A shard's rows of a feed: the batch split into `shards` equal parts."""
    if shards == 1:
        return feed
    rows = feed.shape[0] // shards
    return feed[shard * rows : (shard + 1) * rows]


def _peer_array(xp: PeerNamespace, payload: Any) -> Any:
    """A Tensor's or Indices' values as the peer's array."""
    return xp.constant(np.asarray(payload.numpy()))
