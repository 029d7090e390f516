"""Neural-network building blocks: layers, losses, initializers, optimizers."""

from topos.nn import init

__all__ = ["init"]
