"""Training: the workload protocol and what trains one route of it — the route's program
(recorded, differentiated, lowered, sharded) and the training loop."""

from topos.training.parameter_memory import ParameterMemory
from topos.training.route_program import RouteProgram
from topos.training.step_memory import StepMemory, step_memory
from topos.training.training import Training
from topos.training.workload import Recording, StepSchedule, Workload

__all__ = [
    "ParameterMemory",
    "Recording",
    "RouteProgram",
    "StepMemory",
    "StepSchedule",
    "Training",
    "Workload",
    "step_memory",
]
