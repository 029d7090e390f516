"""Training: the workload protocol and what trains one route of it — the route's program
(recorded, differentiated, lowered, sharded), the batch orders, the parameters' and a
step's memory, and the training loop."""

from topos.training.constant_rate import ConstantRate
from topos.training.parameter_memory import ParameterMemory
from topos.training.random_windows import RandomWindows, random_windows
from topos.training.route_program import RouteProgram
from topos.training.shuffled_batches import ShuffledBatches, TooFewSamplesError
from topos.training.step_memory import StepMemory, step_memory
from topos.training.training import Training
from topos.training.workload import BatchOrder, Recording, StepSchedule, Workload

__all__ = [
    "BatchOrder",
    "ConstantRate",
    "ParameterMemory",
    "RandomWindows",
    "Recording",
    "RouteProgram",
    "ShuffledBatches",
    "StepMemory",
    "StepSchedule",
    "TooFewSamplesError",
    "Training",
    "Workload",
    "random_windows",
    "step_memory",
]
