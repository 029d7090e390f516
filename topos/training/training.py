"""Training: one route of one workload, recorded, lowered and ready to step.

This is the seed program's main loop as an object, shared by `topos run`, the
grader's worker and the examples, so every one of them trains the same trajectory.
"""

from __future__ import annotations

import numpy as np

from topos.datasets import Dataset, Split
from topos.engine.budget import Budget
from topos.graph import Parameters
from topos.graph.parameter_gradients import ParameterGradients
from topos.tensor import Tensor
from topos.training.parameter_memory import ParameterMemory
from topos.training.route_program import RouteProgram
from topos.training.step_memory import StepMemory, step_memory
from topos.training.workload import Workload, classifier_feeds


class Training:
    """A workload's route, ready to train on `dataset` for `steps` steps (the workload
    fitted to the dataset first: see `Workload.fitted`; the remat route under `budget`,
    or rebuilt from the `lowered_schedule` a lowering under it chose: see RouteProgram),
    in float32, or in `dtype` float64 (a peer's float64 twin: see
    `float64_twin`; its shards on threads, its float feeds made float64).

    It owns its parameters (`ParameterMemory`): each step's update is written into
    their memory, so `parameters` is the current state, changing as training goes on
    (`snapshot()` keeps one)."""

    def __init__(
        self,
        workload: Workload,
        route: str,
        dataset: Dataset,
        steps: int,
        budget: Budget | int | float | str | None = None,
        dtype: type = np.float32,
        lowered_schedule: str | None = None,
    ) -> None:
        if steps < 1:
            raise ValueError(f"steps must be at least 1, not {steps}")
        workload = workload.fitted(dataset)
        in_float32 = np.dtype(dtype) == np.float32
        self.program = RouteProgram(
            workload,
            route,
            budget,
            shard_processes=None if in_float32 else False,
            dtype=dtype,
            lowered_schedule=lowered_schedule,
        )
        self.workload = workload
        self.route = route
        self.dataset = dataset
        self.steps = steps
        self.recording = self.program.recording
        self.plan = self.program.plan
        self.memory = ParameterMemory(self.program.network.parameters())
        # One optimizer per training: its state (Adam's moments) is this trajectory's.
        self.optimizer = workload.optimizer()
        self.order = workload.batch_order(dataset)

    @property
    def parameters(self) -> Parameters:
        """The current parameters (updated in place by every step)."""
        return self.memory.parameters

    @property
    def state(self) -> dict[str, Tensor]:
        """The state the next step is fed, by name (`Tape.state`: a batch norm's running
        statistics), as the steps so far left it; feed it to an evaluation network's
        states by name (`Network.state_symbols`)."""
        return self.program.named_state()

    def snapshot(self) -> Parameters:
        """The current parameters, as a Parameters later steps leave alone."""
        return self.memory.snapshot()

    def batch_indices(self, step: int) -> np.ndarray:
        """The indices step `step` trains on, as the workload's batch order gives them
        (the seed's wrap-around schedule by default)."""
        return self.order.indices(step)

    def feeds(self, step: int) -> dict:
        """The input payloads of step `step`'s batch, as the workload makes them."""
        indices = self.batch_indices(step)
        feeds = dict(self.workload.feeds(self.dataset.train, indices, self.recording))
        dtype = self.program.network.dtype
        if dtype != np.float32:
            # The datasets make float32 payloads; index inputs stay as they are.
            for symbol, feed in feeds.items():
                if isinstance(feed, Tensor) and feed.dtype != dtype:
                    feeds[symbol] = Tensor.adopt(feed.numpy().astype(dtype))
        return feeds

    def hold_batches(self) -> None:
        """Keeps in memory only the training images the steps read, their batches known
        before the first step (a 300-step cifar10 run reads 19,200 of 50,000 images: 56 of
        147 MiB); `dataset` becomes that dataset, and the whole one is freed once nobody
        else holds it. Only where the reads are known: an image split fed by
        `classifier_feeds`, which reads each batch's samples and no others."""
        train = self.dataset.train
        if not isinstance(train, Split) or self.workload.feeds is not classifier_feeds:
            return
        read = np.zeros(len(train), dtype=bool)
        for step in range(self.steps):
            read[self.batch_indices(step)] = True
            if step % 256 == 255 and read.all():
                return  # a long run reads every sample: nothing to free
        samples = np.flatnonzero(read)
        if samples.size < train.held:
            self.dataset = self.dataset.holding(samples)

    def compute(self, step: int) -> tuple[np.float32, ParameterGradients]:
        """Runs step `step`'s forward and gradients without updating anything."""
        return self.program.compute(self.parameters, self.feeds(step))

    def step(self, step: int) -> np.float32:
        """Trains one step: forward, gradients, the workload's optimizer at this step's
        learning rate; returns the loss."""
        loss, gradients = self.compute(step)
        self.program.commit_state()
        self.optimizer.learning_rate = float(self.workload.learning_rate(step, self.steps))
        self.memory.update(self.optimizer, gradients)
        return loss

    def warm_up(self) -> None:
        """Runs step 0's computation once and throws it away: parameters and batch order
        stay untouched, so the trajectory is still the seed's. With shards, every BLAS
        buffer the shards can take is then touched by a shard's products (which buffer a
        product takes depends on scheduling; see `blas_buffers`)."""
        self.compute(0)
        self.program.touch_blas_buffers(self.parameters, self.feeds(0))

    def step_memory(self) -> StepMemory:
        """What a step of this training adds to the process at its peak, part by part."""
        return step_memory(self.program, self.optimizer)

    def summary(self, *, seek_floor: bool = True) -> list[str]:
        """The plan's summary lines in the route's terms (`RouteProgram.summary`)."""
        return self.program.summary(seek_floor=seek_floor)
