"""Neural-network building blocks: layers, losses, initializers, optimizers."""

from topos.nn import init
from topos.nn.activation import gelu
from topos.nn.attention import CausalSelfAttention, attention, causal_self_attention
from topos.nn.average_pool import AdaptiveAvgPool2d, AvgPool2d, adaptive_avg_pool2d, avg_pool2d
from topos.nn.batch_norm import BatchNorm1d, BatchNorm2d, batch_norm
from topos.nn.binary_cross_entropy import binary_cross_entropy_with_logits
from topos.nn.concat import concat, stack
from topos.nn.conv1d import Conv1d, conv1d
from topos.nn.conv2d import Conv2d, conv2d, conv2d_max_pool
from topos.nn.dropout import dropout, dropout_mask
from topos.nn.embedding import Embedding, embedding
from topos.nn.group_norm import GroupNorm, group_norm
from topos.nn.gru import GRU, GRUCell
from topos.nn.layer_norm import LayerNorm, layer_norm
from topos.nn.linear import Linear
from topos.nn.loss import cross_entropy, log_softmax, nll_loss, softmax
from topos.nn.lstm import LSTM, LSTMCell
from topos.nn.module import Module
from topos.nn.optimizers import SGD, Adam, AdamW
from topos.nn.pooling import max_pool
from topos.nn.regression_losses import l1_loss, mse_loss
from topos.nn.rms_norm import RMSNorm, rms_norm
from topos.nn.rotary import Rotary, rotary, rotary_tables
from topos.nn.split import split
from topos.nn.where import where

__all__ = [
    "GRU",
    "LSTM",
    "SGD",
    "Adam",
    "AdamW",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "CausalSelfAttention",
    "Conv1d",
    "Conv2d",
    "Embedding",
    "GRUCell",
    "GroupNorm",
    "LSTMCell",
    "LayerNorm",
    "Linear",
    "Module",
    "RMSNorm",
    "Rotary",
    "adaptive_avg_pool2d",
    "attention",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy_with_logits",
    "causal_self_attention",
    "concat",
    "conv1d",
    "conv2d",
    "conv2d_max_pool",
    "cross_entropy",
    "dropout",
    "dropout_mask",
    "embedding",
    "gelu",
    "group_norm",
    "init",
    "l1_loss",
    "layer_norm",
    "log_softmax",
    "max_pool",
    "mse_loss",
    "nll_loss",
    "rms_norm",
    "rotary",
    "rotary_tables",
    "softmax",
    "split",
    "stack",
    "where",
]
