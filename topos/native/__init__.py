"""Native workloads: a training step written in PyTorch or JAX itself, graded by its routes.

A native workload is not recorded on a topos `Tape`: its model, loss and optimizer are
the user's own PyTorch (`TorchWorkload`) or JAX (`JaxWorkload`), and its routes are
variants of that one step (PyTorch: eager, checkpointed, selectively checkpointed,
compiled, compiled under an activation memory budget; JAX: jitted, under a
`jax.checkpoint` policy; or a route of the user's own). topos gives each route the same
initial parameters and the same batches in the same order, and measures it as its own
routes.

Nothing here imports PyTorch or JAX until a route is made: the grading parent reads a
native workload's names (in its preflight child) without paying for the framework.
"""

from topos.native.jax_optimizer import JaxOptimizer, adam, sgd
from topos.native.jax_workload import JaxWorkload
from topos.native.native_data import NativeData
from topos.native.native_route import NativeRoute
from topos.native.torch_workload import TorchWorkload

__all__ = [
    "JaxOptimizer",
    "JaxWorkload",
    "NativeData",
    "NativeRoute",
    "TorchWorkload",
    "adam",
    "sgd",
]
