"""TorchTraining: one route of a PyTorch workload, ready to step and to be compared."""

from __future__ import annotations

import gc
import hashlib
from typing import Any

import numpy as np

from topos.native.native_data import NativeData
from topos.native.native_training import (
    NativeProgram,
    ReferenceComparison,
    step_seed,
)
from topos.native.step_tensors import StepTensors, torch_step_tensors
from topos.native.torch_workload import TorchWorkload
from topos.training.gradient_errors import gradient_errors_on_model_scale

#: The route every other is judged against: the step as the workload wrote it.
REFERENCE_ROUTE = "eager"


class TorchTraining:
    """Route `route` of `workload` on the data from `directory` for `steps` steps: the
    seeded model, the optimizer, and the route's loss, stepped by `step`."""

    def __init__(
        self, workload: TorchWorkload, route: str, directory: str | None, steps: int
    ) -> None:
        import torch

        if workload.threads is not None:
            torch.set_num_threads(workload.threads)
        self.workload = workload
        self.route_name = route
        self.route = workload.route(route)
        self.steps = steps
        self.dataset: NativeData = workload.native_data(directory)
        if len(self.dataset) < workload.batch_size:
            raise ValueError(
                f"workload {workload.name!r}: {len(self.dataset)} samples, fewer than a "
                f"batch of {workload.batch_size}"
            )
        self.model, self.loss_of = self._made(route)
        self.optimizer = workload.optimizer(self.model.parameters())
        self.program = NativeProgram()
        self.version = str(torch.__version__)

    def _made(self, route: str) -> tuple[Any, Any]:
        """A freshly seeded model and route `route`'s loss of it."""
        model = self.workload.seeded_model()
        model.train()
        blocks = list(self.workload.blocks(model)) if self.workload.blocks else []
        return model, self.workload.route(route).make(model, self.workload.loss, blocks)

    def tensors(self, step: int) -> list[Any]:
        """Step `step`'s batch as tensors."""
        import torch

        arrays = self.dataset.batch(step, self.workload.batch_size, self.workload.shuffle_state)
        return [torch.from_numpy(array) for array in arrays]

    def _loss(self, loss_of: Any, step: int, batch: list[Any]) -> Any:
        """One forward and backward of `loss_of` on `batch`, step `step`'s random state."""
        import torch

        torch.manual_seed(step_seed(self.workload.seed, step))
        loss = loss_of(*batch)
        loss.backward()
        return loss

    def step(self, step: int) -> np.floating:
        """Trains one step; returns its loss as a float32 (its bits are diffed)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._loss(self.loss_of, step, self.tensors(step))
        self.optimizer.step()
        return np.asarray(loss.detach().numpy(), np.float32)[()]

    def warm_up(self) -> None:
        """Step 0's loss and gradients computed once and thrown away: parameters, the
        optimizer's state and the batch order untouched (a compiled route compiles here)."""
        self._loss(self.loss_of, 0, self.tensors(0))
        self.optimizer.zero_grad(set_to_none=True)

    def step_tensors(self) -> StepTensors:
        """Step 0's forward and backward pass by this route once more, under PyTorch's
        profiler: the peak bytes of its own tensors (`step_tensors.torch_step_tensors`;
        resident memory cannot see them, see there). Run after `compare_with_reference`,
        so a compiled route has compiled; its gradients are thrown away, the parameters,
        the optimizer's state and the batch order untouched, and no measured step is
        profiled. The optimizer's update, the same in every route, is not in it."""
        self.optimizer.zero_grad(set_to_none=True)
        batch = self.tensors(0)
        gc.collect()
        measured = torch_step_tensors(lambda: self._loss(self.loss_of, 0, batch))
        self.optimizer.zero_grad(set_to_none=True)
        gc.collect()
        return measured

    def partitioner_estimates(self) -> tuple[list[dict[str, Any]], str | None]:
        """What PyTorch's partitioner estimated of each graph this route compiled so far
        (`partitioner_estimate.PartitionerEstimate.to_json`), and why there is none where
        it could not be read (None otherwise: an eager route simply has none)."""
        from topos.native import partitioner_estimate

        estimates = [estimate.to_json() for estimate in partitioner_estimate.recorded()]
        return estimates, partitioner_estimate.unavailable()

    def compare_with_reference(self) -> ReferenceComparison:
        """Step 0 by this route and by `eager`, each on a model of its own from the same
        seed, on the same batch and random state (see `ReferenceComparison`); each
        gradient's error on the model's scale (`gradient_errors_on_model_scale`)."""
        import torch

        batch = self.tensors(0)
        reference, reference_loss = self._made(REFERENCE_ROUTE)
        expected = self._loss(reference_loss, 0, batch)
        expected_rng = _digest(torch.get_rng_state())
        expected_gradients = {
            name: None if parameter.grad is None else parameter.grad.detach().clone()
            for name, parameter in reference.named_parameters()
        }
        del reference, reference_loss
        gc.collect()
        actual = self._loss(self.loss_of, 0, batch)
        comparison = ReferenceComparison(
            loss_identical=_bits(actual) == _bits(expected),
            rng_matches_reference=_digest(torch.get_rng_state()) == expected_rng,
        )
        pairs = []
        for name, parameter in self.model.named_parameters():
            wanted = expected_gradients.get(name)
            got = parameter.grad
            if wanted is None or got is None:
                if (wanted is None) != (got is None):
                    comparison.differing_gradients.append(name)
                continue
            pairs.append((name, got.detach().double().numpy(), wanted.double().numpy()))
            if not torch.equal(got, wanted):
                comparison.differing_gradients.append(name)
        comparison.gradient_errors, comparison.gradient_scale = gradient_errors_on_model_scale(
            pairs
        )
        self.optimizer.zero_grad(set_to_none=True)
        del expected_gradients
        gc.collect()
        return comparison


def _bits(loss: Any) -> int:
    """A float32 loss's bits."""
    return int(np.asarray(loss.detach().numpy(), np.float32).view(np.uint32))


def _digest(state: Any) -> str:
    """A digest of a generator state tensor's bytes."""
    return hashlib.sha256(state.numpy().tobytes()).hexdigest()
