"""The cifar10 seed model on either gradient route, and its hand-written PyTorch twin,
for the benchmarks.

The model is the `cifar10` workload's (topos/workloads/cifar10.py: three
3x3 conv/relu/2x2-pool stages of 16, 32 and 64 filters and a 1024 -> 10 head,
seeds 21/22/23 and kaiming(24)), lowered by the same RouteProgram the grader
uses; this module adds plain SGD steps on given batches, written into the parameters'
memory in place as `topos grade`'s training loop writes them (`ParameterMemory`).
`torch_twin` is the same model written by hand in PyTorch (`step_time.py` times it;
tests/peers checks the emitted PyTorch program against it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from topos import Tensor
from topos.nn.optimizers import SGD
from topos.training import RouteProgram
from topos.training.parameter_memory import ParameterMemory
from topos.workloads import resolve

ROUTES = ("engine", "recorded")
CLASSES = 10


@dataclass
class Trainer:
    """One route of the model, lowered and ready: `step(images, labels)` trains once."""

    route: str
    program: RouteProgram
    network: object
    plan: object
    images: object
    targets: object
    loss: object
    adjoints: object
    memory: ParameterMemory
    forward_nodes: int
    gradient_nodes: int
    optimizer: SGD = field(default_factory=lambda: SGD(0.05))

    @property
    def parameters(self):
        """The current parameters (each step writes its update into their memory)."""
        return self.memory.parameters

    def step(self, images: np.ndarray, labels: np.ndarray, learning_rate: float = 0.05):
        """One SGD step on a batch (`parameter - gradient * learning_rate`, in place, as
        `Training.step` updates); returns the loss as a float32 NumPy scalar."""
        feeds = {
            self.images: Tensor.adopt(images),
            self.targets: Tensor.selection(labels, CLASSES),
        }
        loss, gradients = self.program.compute(self.memory.parameters, feeds)
        self.optimizer.learning_rate = float(learning_rate)
        self.memory.update(self.optimizer, gradients)
        return loss


def build(
    route: str,
    batch: int = 64,
    shards: int | None = None,
    shard_processes: bool = False,
    workload: str = "cifar10",
) -> Trainer:
    """The `cifar10` workload's model lowered for `route`, at `batch` rows in `shards`
    shards (default: the workload's), the shards past the first in forked processes with
    `shard_processes` (as `cifar10` runs them on Linux; else on threads, as
    `cifar10-threads`): the very recording `topos grade` trains, so the benchmark
    measures what users grade. `workload` names a variant of the same model and
    initial weights instead (`cifar10-winograd`)."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    workload = resolve(workload)
    workload = replace(
        workload, batch_size=batch, shards=workload.shards if shards is None else shards
    )
    program = RouteProgram(workload, route, shard_processes=shard_processes)
    recording = program.recording
    return Trainer(
        route,
        program,
        program.network,
        program.plan,
        recording.images,
        recording.targets,
        recording.loss,
        program.adjoints,
        ParameterMemory(program.network.parameters()),
        program.forward_nodes,
        program.gradient_nodes,
    )


class EmittedTrainer:
    """The model's recording emitted to peer `peer` (`torch`, `torch-compile` or `jax`;
    topos.peers) in the workload's shards and threads, trained by the peer's autodiff and
    plain SGD: `step(images, labels)` as `Trainer.step`."""

    def __init__(self, peer: str, batch: int = 64) -> None:
        from topos.graph.tape import Tape
        from topos.peers import make_emitter
        from topos.peers.peer_optimizer import OptimizerSettings

        workload = replace(resolve("cifar10"), batch_size=batch)
        tape = Tape()
        self.recording = workload.record(tape, batch // workload.shards)
        network = tape.into_network()
        parameters = [symbol.index for symbol in self.recording.parameters]
        self.emitter = make_emitter(
            peer,
            network,
            self.recording.loss,
            parameters,
            workload.shards,
            workload.blas_threads,
        )
        self.emitter.configure(OptimizerSettings("sgd"))

    def step(self, images: np.ndarray, labels: np.ndarray, learning_rate: float = 0.05):
        """One SGD step on a batch; returns the loss."""
        targets = np.eye(CLASSES, dtype=np.float32)[labels]
        feeds = {self.recording.images.index: images, self.recording.targets.index: targets}
        return self.emitter.step(feeds, learning_rate)


def batches(steps: int, batch: int = 64, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Deterministic CIFAR-shaped batches (standard normal pixels, uniform labels)."""
    generator = np.random.default_rng(seed)
    images = generator.standard_normal((steps * batch, 3, 32, 32)).astype(np.float32)
    labels = generator.integers(0, CLASSES, steps * batch)
    return [
        (images[i * batch : (i + 1) * batch], labels[i * batch : (i + 1) * batch])
        for i in range(steps)
    ]


def torch_twin(torch, arrays: list[np.ndarray] | None = None):
    """The model written by hand in PyTorch (`torch.nn.Sequential`), holding the model's
    initial weights, or `arrays` (the parameters in recording order: each conv's weights
    and bias, then the head's), in the arrays' dtype."""
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(1024, 10),
    )
    if arrays is not None and np.asarray(arrays[0]).dtype == np.float64:
        model = model.double()
    copy_weights_into([model[0], model[3], model[6], model[10]], torch, arrays)
    return model


def copy_weights_into(layers, torch, arrays: list[np.ndarray] | None = None) -> None:
    """Gives a PyTorch twin the model's initial weights (or `arrays`, the parameters in
    recording order): `layers` are its three convs and its head, in order (topos keeps
    the head as [in, out], torch as [out, in])."""
    if arrays is None:
        arrays = [tensor.numpy() for _, tensor in build("engine").parameters.items()]
    with torch.no_grad():
        for position, layer in enumerate(layers):
            weights, bias = arrays[2 * position], arrays[2 * position + 1]
            if position == 3:
                weights = weights.T
            layer.weight.copy_(torch.from_numpy(np.array(weights)))
            layer.bias.copy_(torch.from_numpy(np.array(bias)))


if __name__ == "__main__":
    from benchmarks.catalogue import describe

    raise SystemExit(describe("cifar10_model", __doc__))
