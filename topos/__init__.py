"""topos: record a model once, lower it into a plan, train it by two gradient routes.

Both routes — `engine` (a backward sweep over a retain-all plan) and `recorded`
(the chain rule recorded into the graph, run forward-only) — train bit-identically.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Where each public name lives. Importing `topos` loads none of them (nor NumPy), so a
#: NumPy-free module such as `topos.names` is cheap to import; the first public name
#: used loads its module, and with it the primitives.
_EXPORTS = {
    "Entry": "topos.engine",
    "Gradients": "topos.engine",
    "Plan": "topos.engine",
    "Run": "topos.engine",
    "GraphError": "topos.errors",
    "ShapeError": "topos.errors",
    "Adjoints": "topos.graph",
    "Network": "topos.graph",
    "ParameterGradients": "topos.graph",
    "Parameters": "topos.graph",
    "Symbol": "topos.graph",
    "Tape": "topos.graph",
    "Value": "topos.graph",
    "SGD": "topos.nn",
    "Adam": "topos.nn",
    "Conv2d": "topos.nn",
    "Linear": "topos.nn",
    "Module": "topos.nn",
    "conv2d": "topos.nn",
    "conv2d_max_pool": "topos.nn",
    "cross_entropy": "topos.nn",
    "init": "topos.nn",
    "log_softmax": "topos.nn",
    "max_pool": "topos.nn",
    "softmax": "topos.nn",
    "AdamW": "topos.nn",
    "CausalSelfAttention": "topos.nn",
    "Embedding": "topos.nn",
    "LayerNorm": "topos.nn",
    "causal_self_attention": "topos.nn",
    "embedding": "topos.nn",
    "gelu": "topos.nn",
    "layer_norm": "topos.nn",
    "RMSNorm": "topos.nn",
    "Rotary": "topos.nn",
    "attention": "topos.nn",
    "concat": "topos.nn",
    "dropout": "topos.nn",
    "dropout_mask": "topos.nn",
    "rms_norm": "topos.nn",
    "rotary": "topos.nn",
    "rotary_tables": "topos.nn",
    "split": "topos.nn",
    "stack": "topos.nn",
    "where": "topos.nn",
    "mse_loss": "topos.nn",
    "l1_loss": "topos.nn",
    "binary_cross_entropy_with_logits": "topos.nn",
    "nll_loss": "topos.nn",
    "BatchNorm1d": "topos.nn",
    "BatchNorm2d": "topos.nn",
    "batch_norm": "topos.nn",
    "AdaptiveAvgPool2d": "topos.nn",
    "AvgPool2d": "topos.nn",
    "adaptive_avg_pool2d": "topos.nn",
    "avg_pool2d": "topos.nn",
    "GroupNorm": "topos.nn",
    "group_norm": "topos.nn",
    "Conv1d": "topos.nn",
    "conv1d": "topos.nn",
    "Indices": "topos.indices",
    "Shape": "topos.tensor",
    "Tensor": "topos.tensor",
}

if TYPE_CHECKING:
    from topos.engine import Entry, Gradients, Plan, Run
    from topos.errors import GraphError, ShapeError
    from topos.graph import (
        Adjoints,
        Network,
        ParameterGradients,
        Parameters,
        Symbol,
        Tape,
        Value,
    )
    from topos.indices import Indices
    from topos.nn import (
        SGD,
        Adam,
        AdamW,
        AdaptiveAvgPool2d,
        AvgPool2d,
        BatchNorm1d,
        BatchNorm2d,
        CausalSelfAttention,
        Conv1d,
        Conv2d,
        Embedding,
        GroupNorm,
        LayerNorm,
        Linear,
        Module,
        RMSNorm,
        Rotary,
        adaptive_avg_pool2d,
        attention,
        avg_pool2d,
        batch_norm,
        binary_cross_entropy_with_logits,
        causal_self_attention,
        concat,
        conv1d,
        conv2d,
        conv2d_max_pool,
        cross_entropy,
        dropout,
        dropout_mask,
        embedding,
        gelu,
        group_norm,
        init,
        l1_loss,
        layer_norm,
        log_softmax,
        max_pool,
        mse_loss,
        nll_loss,
        rms_norm,
        rotary,
        rotary_tables,
        softmax,
        split,
        stack,
        where,
    )
    from topos.tensor import Shape, Tensor


def __getattr__(name: str) -> Any:
    """Loads a public name's module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'topos' has no attribute {name!r}")
    importlib.import_module("topos.ops")  # registers the primitives
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__version__ = "0.1.0"

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "AdaptiveAvgPool2d",
    "Adjoints",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "CausalSelfAttention",
    "Conv1d",
    "Conv2d",
    "Embedding",
    "Entry",
    "Gradients",
    "GraphError",
    "GroupNorm",
    "Indices",
    "LayerNorm",
    "Linear",
    "Module",
    "Network",
    "ParameterGradients",
    "Parameters",
    "Plan",
    "RMSNorm",
    "Rotary",
    "Run",
    "Shape",
    "ShapeError",
    "Symbol",
    "Tape",
    "Tensor",
    "Value",
    "__version__",
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
