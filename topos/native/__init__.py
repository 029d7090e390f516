"""Native workloads: a training step written in PyTorch itself, graded by its routes.

A native workload is not recorded on a topos `Tape`: its model, loss and optimizer are
the user's own PyTorch, and its routes are variants of that one step (eager,
checkpointed, selectively checkpointed, compiled, compiled under an activation memory
budget, or a route of the user's own). topos gives each route the same initial
parameters and the same batches in the same order, and measures it as its own routes.

Nothing here imports PyTorch until a route is made: the grading parent reads a native
workload's names (in its preflight child) without paying for the framework.
"""

from topos.native.native_data import NativeData
from topos.native.native_route import NativeRoute
from topos.native.torch_workload import TorchWorkload

__all__ = ["NativeData", "NativeRoute", "TorchWorkload"]
