"""Training: the workload protocol and what trains one route of it — the route's program
(recorded, differentiated, lowered, sharded), the batch orders and the training loop."""

from topos.training.random_windows import RandomWindows, random_windows
from topos.training.route_program import RouteProgram
from topos.training.shuffled_batches import ShuffledBatches, TooFewSamplesError
from topos.training.training import Training
from topos.training.workload import BatchOrder, Recording, StepSchedule, Workload

__all__ = [
    "BatchOrder",
    "RandomWindows",
    "Recording",
    "RouteProgram",
    "ShuffledBatches",
    "StepSchedule",
    "TooFewSamplesError",
    "Training",
    "Workload",
    "random_windows",
]
