"""Training: one route of one workload, recorded, lowered and ready to step.

This is the seed program's main loop as an object, shared by `topos run`, the
grader's worker and the examples, so every one of them trains the same trajectory.
"""

from __future__ import annotations

import numpy as np

from topos import Parameters
from topos.datasets import DataError, Dataset
from topos.graph.parameter_gradients import ParameterGradients
from topos.training.route_program import RouteProgram
from topos.training.shuffled_batches import TooFewSamplesError
from topos.training.workload import Workload


class Training:
    """A workload's route, ready to train on `dataset` for `steps` steps (the workload
    fitted to the dataset first: see `Workload.fitted`)."""

    def __init__(self, workload: Workload, route: str, dataset: Dataset, steps: int) -> None:
        if steps < 1:
            raise ValueError(f"steps must be at least 1, not {steps}")
        workload = workload.fitted(dataset)
        self.program = RouteProgram(workload, route)
        self.workload = workload
        self.route = route
        self.dataset = dataset
        self.steps = steps
        self.recording = self.program.recording
        self.plan = self.program.plan
        self.parameters: Parameters = self.program.network.parameters()
        # One optimizer per training: its state (Adam's moments) is this trajectory's.
        self.optimizer = workload.optimizer()
        train = dataset.train
        try:
            self.order = workload.batches(train, workload.batch_size, workload.shuffle_state)
        except TooFewSamplesError as shortage:
            unit = getattr(train, "unit", "images")
            raise DataError(
                dataset.source,
                f"dataset {dataset.name!r} has {len(train)} training {unit}, too few for "
                f"workload {workload.name!r}: {shortage}",
            ) from None

    def batch_indices(self, step: int) -> np.ndarray:
        """The indices step `step` trains on, as the workload's batch order gives them
        (the seed's wrap-around schedule by default)."""
        return self.order.indices(step)

    def feeds(self, step: int) -> dict:
        """The input payloads of step `step`'s batch, as the workload makes them."""
        indices = self.batch_indices(step)
        return dict(self.workload.feeds(self.dataset.train, indices, self.recording))

    def compute(self, step: int) -> tuple[np.float32, ParameterGradients]:
        """Runs step `step`'s forward and gradients without updating anything."""
        return self.program.compute(self.parameters, self.feeds(step))

    def step(self, step: int) -> np.float32:
        """Trains one step: forward, gradients, the workload's optimizer at this step's
        learning rate; returns the loss."""
        loss, gradients = self.compute(step)
        self.optimizer.learning_rate = float(self.workload.learning_rate(step, self.steps))
        self.parameters = self.optimizer.step(self.parameters, gradients)
        return loss

    @property
    def predicted_training_bytes(self) -> int:
        """What a training step should add to the process at its peak: every shard's plan
        (`Plan.predicted_training_bytes`), the shards' averaged gradients, the optimizer's
        new parameters (made while the old are still held) and its state (`state_bytes`,
        when the optimizer keeps any: Adam's and AdamW's two moments)."""
        program = self.program
        parameter_bytes = sum(tensor.numpy().nbytes for _, tensor in self.parameters.items())
        total = program.plan.predicted_training_bytes * program.shards + parameter_bytes
        if program.shards > 1:
            total += parameter_bytes
        state_bytes = getattr(self.optimizer, "state_bytes", None)
        if state_bytes is not None:
            total += state_bytes(self.parameters)
        return total

    def warm_up(self) -> None:
        """Runs step 0's computation once and throws it away: parameters and batch order
        stay untouched, so the trajectory is still the seed's."""
        self.compute(0)

    def summary(self) -> list[str]:
        """The plan's `plan:` and `live volume:` lines."""
        return self.plan.summary()
