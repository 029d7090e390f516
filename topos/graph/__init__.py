"""Recording and sealing: Tape, Value, Symbol, Network, Parameters, Adjoints; `matmul` and
`einsum`, the products PyTorch code spells as functions."""

from topos.graph.adjoints import Adjoints
from topos.graph.einsum import einsum
from topos.graph.network import Network
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.graph.product import matmul
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value

__all__ = [
    "Adjoints",
    "Network",
    "ParameterGradients",
    "Parameters",
    "Symbol",
    "Tape",
    "Value",
    "einsum",
    "matmul",
]
