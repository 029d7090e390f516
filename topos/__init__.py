"""topos: record a model once, lower it into a plan, train it by two gradient routes.

Both routes — `engine` (a backward sweep over a retain-all plan) and `recorded`
(the chain rule recorded into the graph, run forward-only) — train bit-identically.
"""

from topos import ops  # noqa: F401  (registers the primitives)
from topos.engine import Entry, Gradients, Plan, Run
from topos.errors import GraphError, ShapeError
from topos.graph import Adjoints, Network, ParameterGradients, Parameters, Symbol, Tape, Value
from topos.nn import (
    SGD,
    Adam,
    Conv2d,
    Linear,
    Module,
    conv2d,
    conv2d_max_pool,
    cross_entropy,
    init,
    log_softmax,
    max_pool,
    softmax,
)
from topos.tensor import Shape, Tensor

__version__ = "0.1.0"

__all__ = [
    "SGD",
    "Adam",
    "Adjoints",
    "Conv2d",
    "Entry",
    "Gradients",
    "GraphError",
    "Linear",
    "Module",
    "Network",
    "ParameterGradients",
    "Parameters",
    "Plan",
    "Run",
    "Shape",
    "ShapeError",
    "Symbol",
    "Tape",
    "Tensor",
    "Value",
    "__version__",
    "conv2d",
    "conv2d_max_pool",
    "cross_entropy",
    "init",
    "log_softmax",
    "max_pool",
    "softmax",
]
