"""topos: record a model once, lower it into a plan, train it by two gradient routes.

Both routes — `engine` (a backward sweep over a retain-all plan) and `recorded`
(the chain rule recorded into the graph, run forward-only) — train bit-identically.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

# The public names, listed once: the imports below. They never run (importing `topos`
# loads none of them, nor NumPy, so a NumPy-free module such as `topos.names` is cheap
# to import); type checkers and the documentation read them as they are, and
# `__getattr__` reads them from this file to load a name's module on its first use.
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
        einsum,
        matmul,
    )
    from topos.indices import Indices
    from topos.nn import (
        GRU,
        LSTM,
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
        GRUCell,
        LayerNorm,
        Linear,
        LSTMCell,
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
    from topos.training.recording_dtype import DtypeNotSupportedError
    from topos.training.shard_processes import ShardProcessError
    from topos.training.shuffled_batches import TooFewSamplesError
    from topos.workloads.registry import WorkloadNotFoundError


@functools.cache
def _exports() -> dict[str, str]:
    """Each public name and the module it lives in: the imports of the block above, read
    from this file's source (once, at the first use of a name)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    (block,) = (
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: statement.module
        for statement in block.body
        if isinstance(statement, ast.ImportFrom) and statement.module is not None
        for alias in statement.names
    }


def __getattr__(name: str) -> Any:
    """Loads a public name's module on first use (PEP 562); `__all__` is the names."""
    if name == "__all__":
        return [*_exports(), "__version__"]
    module = _exports().get(name)
    if module is None:
        raise AttributeError(f"module 'topos' has no attribute {name!r}")
    importlib.import_module("topos.ops")  # registers the primitives
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_exports()])


__version__ = "0.1.0"
