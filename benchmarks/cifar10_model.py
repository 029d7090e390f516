"""The cifar10 seed model on either gradient route, for the benchmarks.

Three 3x3 conv/relu/2x2-pool stages of 16, 32 and 64 filters and a 1024 -> 10
head, seeds 21/22/23 and kaiming(24), plain SGD: the seed program's model. The
canonical workload lives in topos_cli/workloads/; this copy keeps the
benchmarks free of the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from topos import Conv2d, Linear, Shape, Tape, Tensor, cross_entropy, init, max_pool

ROUTES = ("engine", "recorded")
CLASSES = 10


@dataclass
class Trainer:
    """One route of the model, lowered and ready: `step(images, labels)` trains once."""

    route: str
    network: object
    plan: object
    images: object
    targets: object
    loss: object
    adjoints: object
    parameters: object
    forward_nodes: int
    gradient_nodes: int

    def step(self, images: np.ndarray, labels: np.ndarray, learning_rate: float = 0.05):
        """One SGD step on a batch; returns the loss as a float32 NumPy scalar."""
        feeds = {
            self.images: Tensor.adopt(images),
            self.targets: Tensor.selection(labels, CLASSES),
        }
        run = self.plan.forward(self.parameters, feeds)
        loss = run.of(self.loss).scalar()
        if self.route == "recorded":
            gradients = run.recorded_gradients(self.adjoints)
        else:
            gradients = run.backward(self.loss).parameters(self.parameters)
        self.parameters = self.parameters.step(
            gradients, lambda parameter, gradient: parameter - gradient * learning_rate
        )
        return loss


def build(route: str, batch: int = 64) -> Trainer:
    """Records the seed model and lowers it for `route` ("engine" or "recorded")."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    tape = Tape()
    conv1 = Conv2d(
        tape,
        init.normal(21, (2 / 27) ** 0.5)(Shape([16, 3, 3, 3])),
        Tensor.filled([16], 0.0),
        1,
        1,
    )
    conv2 = Conv2d(
        tape,
        init.normal(22, (2 / 144) ** 0.5)(Shape([32, 16, 3, 3])),
        Tensor.filled([32], 0.0),
        1,
        1,
    )
    conv3 = Conv2d(
        tape,
        init.normal(23, (2 / 288) ** 0.5)(Shape([64, 32, 3, 3])),
        Tensor.filled([64], 0.0),
        1,
        1,
    )
    head_weights = init.kaiming(24)
    head = Linear(tape, head_weights(Shape([1024, 10])), head_weights(Shape([10])))
    images = tape.input(Tensor.filled([batch, 3, 32, 32], 0.0))
    targets = tape.input(Tensor.selection([0] * batch, CLASSES, 1.0))
    stage1 = max_pool(conv1.express(images).relu(), 2, 2)
    stage2 = max_pool(conv2.express(stage1).relu(), 2, 2)
    stage3 = max_pool(conv3.express(stage2).relu(), 2, 2)
    loss = cross_entropy(head.express(stage3.reshape(batch, 1024)), targets)
    parameters = [*conv1.parameters(), *conv2.parameters(), *conv3.parameters()]
    parameters += head.parameters()
    forward_nodes = len(tape)
    adjoints = tape.differentiate(loss.symbol, parameters) if route == "recorded" else None
    gradient_nodes = len(tape) - forward_nodes
    network = tape.into_network()
    if route == "recorded":
        plan = network.entry(adjoints.roots()).lower()
    else:
        plan = network.entry([loss.symbol]).backward().lower()
    return Trainer(
        route,
        network,
        plan,
        images.symbol,
        targets.symbol,
        loss.symbol,
        adjoints,
        network.parameters(),
        forward_nodes,
        gradient_nodes,
    )


def batches(steps: int, batch: int = 64, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Deterministic CIFAR-shaped batches (standard normal pixels, uniform labels)."""
    generator = np.random.default_rng(seed)
    images = generator.standard_normal((steps * batch, 3, 32, 32)).astype(np.float32)
    labels = generator.integers(0, CLASSES, steps * batch)
    return [
        (images[i * batch : (i + 1) * batch], labels[i * batch : (i + 1) * batch])
        for i in range(steps)
    ]
