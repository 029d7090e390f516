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
    "GradientStep": "topos.engine.gradient_step",
    "value_and_grad": "topos.engine.gradient_step",
    "primitive": "topos.extension",
    "BudgetError": "topos.errors",
    "NotDifferentiableError": "topos.errors",
    "RegistrationError": "topos.errors",
    "DataError": "topos.datasets.errors",
    "DtypeNotSupportedError": "topos.training.recording_dtype",
    "ShardProcessError": "topos.training.shard_processes",
    "TooFewSamplesError": "topos.training.shuffled_batches",
    "WorkloadNotFoundError": "topos.workloads.registry",
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
    "Indices": "topos.indices",
    "Shape": "topos.tensor",
    "Tensor": "topos.tensor",
}

if TYPE_CHECKING:
    from topos.datasets.errors import DataError
    from topos.engine import Entry, Gradients, Plan, Run
    from topos.engine.gradient_step import GradientStep, value_and_grad
    from topos.errors import (
        BudgetError,
        GraphError,
        NotDifferentiableError,
        RegistrationError,
        ShapeError,
    )
    from topos.extension import primitive
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
        CausalSelfAttention,
        Conv2d,
        Embedding,
        LayerNorm,
        Linear,
        Module,
        RMSNorm,
        Rotary,
        attention,
        causal_self_attention,
        concat,
        conv2d,
        conv2d_max_pool,
        cross_entropy,
        dropout,
        dropout_mask,
        embedding,
        gelu,
        init,
        layer_norm,
        log_softmax,
        max_pool,
        rms_norm,
        rotary,
        rotary_tables,
        softmax,
        split,
        stack,
        where,
    )
    from topos.tensor import Shape, Tensor
    from topos.training.recording_dtype import DtypeNotSupportedError
    from topos.training.shard_processes import ShardProcessError
    from topos.training.shuffled_batches import TooFewSamplesError
    from topos.workloads.registry import WorkloadNotFoundError


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
    "Adjoints",
    "BudgetError",
    "CausalSelfAttention",
    "Conv2d",
    "DataError",
    "DtypeNotSupportedError",
    "Embedding",
    "Entry",
    "GradientStep",
    "Gradients",
    "GraphError",
    "Indices",
    "LayerNorm",
    "Linear",
    "Module",
    "Network",
    "NotDifferentiableError",
    "ParameterGradients",
    "Parameters",
    "Plan",
    "RMSNorm",
    "RegistrationError",
    "Rotary",
    "Run",
    "Shape",
    "ShapeError",
    "ShardProcessError",
    "Symbol",
    "Tape",
    "Tensor",
    "TooFewSamplesError",
    "Value",
    "WorkloadNotFoundError",
    "__version__",
    "attention",
    "causal_self_attention",
    "concat",
    "conv2d",
    "conv2d_max_pool",
    "cross_entropy",
    "dropout",
    "dropout_mask",
    "embedding",
    "gelu",
    "init",
    "layer_norm",
    "log_softmax",
    "max_pool",
    "primitive",
    "rms_norm",
    "rotary",
    "rotary_tables",
    "softmax",
    "split",
    "stack",
    "value_and_grad",
    "where",
]
