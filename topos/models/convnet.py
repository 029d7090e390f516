"""ConvNet: the seed's model family — conv/relu/2x2-pool stages, then a linear head."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from topos.graph import Symbol, Tape, Value
from topos.nn import Conv2d, Linear, cross_entropy, init
from topos.tensor import Shape, Tensor
from topos.training.workload import Recording


class ConvNet:
    """Stages of 3x3 convolution (stride 1, padding 1), relu and 2x2 max pooling,
    flattened into a linear head; every seed fixed so both routes train one trajectory.

    Stage i's kernel is drawn by `init.normal(seeds[i], sqrt(2 / fan_in))` with
    fan_in = channels_in * 9; the head's weights then bias by one `init.kaiming`.
    In `dtype` float64 the very same float32 draws are widened (`topos check`).
    `algorithm` is every stage's `Conv2d` algorithm: with "winograd", the stages where
    Winograd applies and pays use it (cifar10's second and third), the others stay direct.
    """

    def __init__(
        self,
        tape: Tape,
        channels: int,
        side: int,
        filters: Sequence[int],
        kernel_seeds: Sequence[int],
        head_seed: int,
        classes: int,
        dtype: Any = np.float32,
        algorithm: str = "direct",
    ) -> None:
        self.stages: list[Conv2d] = []
        incoming = channels
        for count, seed in zip(filters, kernel_seeds, strict=True):
            deviation = math.sqrt(2.0 / (incoming * 9))
            weights = init.normal(seed, deviation)(Shape([count, incoming, 3, 3])).astype(dtype)
            bias = Tensor.filled([count], 0.0, dtype=dtype)
            self.stages.append(Conv2d(tape, weights, bias, 1, 1, algorithm=algorithm))
            incoming = count
        final_side = side // 2 ** len(filters)
        self.flat_length = incoming * final_side * final_side
        self.classes = classes
        head_weights = init.kaiming(head_seed)
        self.head = Linear(
            tape,
            head_weights(Shape([self.flat_length, classes])).astype(dtype),
            head_weights(Shape([classes])).astype(dtype),
        )

    def express(self, images: Value, rows: int) -> Value:
        """Records the model over `images` and returns the `[rows, classes]` logits."""
        features = images
        for stage in self.stages:
            # relu after the pooling is the same function as before it (relu is
            # monotonic, so it keeps each window's winner), on a quarter of the values.
            features = stage.express_max_pooled(features, 2).relu()
        return self.head.express(features.reshape(rows, self.flat_length))

    def parameters(self) -> list[Symbol]:
        """Every parameter symbol in order: each stage's weights and bias, then the head's."""
        symbols: list[Symbol] = []
        for stage in self.stages:
            symbols += stage.parameters()
        return symbols + self.head.parameters()


def record_classifier(
    tape: Tape, rows: int, model: ConvNet, channels: int, side: int, dtype: Any = np.float32
) -> Recording:
    """Records `model` over a batch of `rows` images `[rows, channels, side, side]` and its
    cross-entropy loss against one-hot targets; the inputs default to zeros and class 0."""
    classes = model.classes
    images = tape.input(Tensor.filled([rows, channels, side, side], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, classes, 1.0, dtype=dtype))
    logits = model.express(images, rows)
    loss = cross_entropy(logits, targets)
    return Recording(images.symbol, targets.symbol, logits.symbol, loss.symbol, model.parameters())
