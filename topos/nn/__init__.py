"""Neural-network building blocks: layers, losses, initializers, optimizers."""

from topos.nn import init
from topos.nn.conv2d import Conv2d, conv2d, conv2d_max_pool
from topos.nn.linear import Linear
from topos.nn.loss import cross_entropy, log_softmax, softmax
from topos.nn.module import Module
from topos.nn.optimizers import SGD, Adam
from topos.nn.pooling import max_pool

__all__ = [
    "SGD",
    "Adam",
    "Conv2d",
    "Linear",
    "Module",
    "conv2d",
    "conv2d_max_pool",
    "cross_entropy",
    "init",
    "log_softmax",
    "max_pool",
    "softmax",
]
