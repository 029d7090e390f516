"""What a peer needs of a workload's optimizer: its kind and settings, read off topos's.

A peer route trains with the peer's own optimizer configured as the workload's: SGD,
Adam or AdamW with the same hyperparameters, AdamW decaying the same parameters. Any
other optimizer is refused by name (a peer cannot guess its arithmetic).
"""

from __future__ import annotations

from dataclasses import dataclass

from topos.graph.network import Network
from topos.nn.optimizers import SGD, Adam, AdamW
from topos.tensor import Shape


@dataclass(frozen=True)
class OptimizerSettings:
    """`kind` (`sgd`, `adam`, `adamw`), its hyperparameters, and for AdamW the node
    indices of the parameters it decays."""

    kind: str
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8
    weight_decay: float = 0.0
    decayed: frozenset[int] = frozenset()


def optimizer_settings(
    optimizer: object, network: Network, parameters: list[int]
) -> OptimizerSettings:
    """The settings of topos optimizer `optimizer` for `parameters` (node indices)."""
    if isinstance(optimizer, AdamW):
        optimizer.name_parameters(network.names)
        decayed = frozenset(
            index
            for index in parameters
            if optimizer.decayed(index, Shape(network.nodes[index].shape))
        )
        return OptimizerSettings(
            "adamw",
            optimizer.beta1,
            optimizer.beta2,
            optimizer.epsilon,
            optimizer.weight_decay,
            decayed,
        )
    if isinstance(optimizer, Adam):
        return OptimizerSettings("adam", optimizer.beta1, optimizer.beta2, optimizer.epsilon)
    if type(optimizer) is SGD:
        return OptimizerSettings("sgd")
    raise NotImplementedError(
        f"a peer route trains with SGD, Adam or AdamW; this workload's optimizer is "
        f"{type(optimizer).__name__}"
    )
