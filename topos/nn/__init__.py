"""Neural-network building blocks: layers, losses, initializers, optimizers."""

from topos.nn import init
from topos.nn.activation import gelu
from topos.nn.attention import CausalSelfAttention, causal_self_attention
from topos.nn.conv2d import Conv2d, conv2d, conv2d_max_pool
from topos.nn.embedding import Embedding, embedding
from topos.nn.layer_norm import LayerNorm, layer_norm
from topos.nn.linear import Linear
from topos.nn.loss import cross_entropy, log_softmax, softmax
from topos.nn.module import Module
from topos.nn.optimizers import SGD, Adam, AdamW
from topos.nn.pooling import max_pool

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "CausalSelfAttention",
    "Conv2d",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Module",
    "causal_self_attention",
    "conv2d",
    "conv2d_max_pool",
    "cross_entropy",
    "embedding",
    "gelu",
    "init",
    "layer_norm",
    "log_softmax",
    "max_pool",
    "softmax",
]
