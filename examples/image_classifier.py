"""An image classifier of your own, graded by topos: the template.

Everything an image workload needs, in one file: a small residual network written as a
PyTorch user writes one (convolutions, `BatchNorm2d`, a residual block, global average
pooling, a linear head), its own deterministic images, and plain SGD on a step schedule.
The batch norms' running statistics are state each step carries to the next, on every
route alike. Grade it from the repository's root with

    PYTHONPATH=examples topos grade --workload image_classifier:workload --steps 50

and check its derivatives with `PYTHONPATH=examples topos check --workload
image_classifier:workload`.
"""

from __future__ import annotations

import numpy as np

from topos import (
    BatchNorm2d,
    Conv2d,
    Linear,
    Tape,
    Tensor,
    adaptive_avg_pool2d,
    cross_entropy,
    init,
)
from topos.datasets import Dataset, Split
from topos.splitmix64 import SplitMix64
from topos.training import Recording, StepSchedule, Workload

CHANNELS = 8  # the network's width
SIDE = 8  # images are 3 x SIDE x SIDE
CLASSES = 4


def record(tape: Tape, rows: int, dtype=np.float32, training: bool = True) -> Recording:
    """The network and its loss over `rows` images, in `dtype` (`topos check` records it
    in float64); `training=False` records the batch norms' evaluation form."""
    seeds = iter(range(700, 800))

    def convolution(inputs: int, name: str) -> Conv2d:
        kernel = init.kaiming(next(seeds))([CHANNELS, inputs, 3, 3]).astype(dtype)
        return Conv2d(tape, kernel, None, padding=1, name=name)  # the norm's bias follows

    def norm(name: str) -> BatchNorm2d:
        return BatchNorm2d(tape, CHANNELS, name=name, dtype=dtype).train(training)

    stem, stem_norm = convolution(3, "conv1"), norm("bn1")
    block_convolutions = [convolution(CHANNELS, f"layer1.conv{i}") for i in (1, 2)]
    block_norms = [norm(f"layer1.bn{i}") for i in (1, 2)]
    head_weights = init.xavier(next(seeds))([CHANNELS, CLASSES]).astype(dtype)
    head = Linear(tape, head_weights, Tensor.filled([CLASSES], 0.0, dtype=dtype), "fc")

    images = tape.input(Tensor.filled([rows, 3, SIDE, SIDE], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, dtype=dtype))
    x = stem_norm.express(stem.express(images)).relu()
    inner = block_norms[0].express(block_convolutions[0].express(x)).relu()
    inner = block_norms[1].express(block_convolutions[1].express(inner))
    x = (x + inner).relu()  # the residual connection
    pooled = adaptive_avg_pool2d(x, 1).reshape(rows, CHANNELS)  # global average pooling
    logits = head.express(pooled)
    loss = cross_entropy(logits, targets)
    return Recording(
        images.symbol, targets.symbol, logits.symbol, loss.symbol, tape.named_parameters()
    )


def _split(count: int, seed: int) -> Split:
    """Class k's images are brightest in quadrant k, over splitmix64 noise."""
    labels = np.arange(count) % CLASSES
    noise = SplitMix64(seed).draws(count * 3 * SIDE * SIDE) % np.uint64(96)
    pixels = noise.astype(np.uint8).reshape(count, 3, SIDE, SIDE)
    half = SIDE // 2
    for k in range(CLASSES):
        top, left = divmod(k, 2)
        pixels[labels == k, :, top * half : (top + 1) * half, left * half : (left + 1) * half] += (
            120
        )
    return Split(pixels, labels, CLASSES, mean=(0.4, 0.4, 0.4), deviation=(0.25, 0.25, 0.25))


def load_dataset(directory: str | None) -> Dataset:
    """The workload's own images (it reads no files)."""
    if directory is not None:
        raise ValueError("the image classifier template makes its own images; drop --data")
    return Dataset(
        "quadrants", "synthetic", "synthetic", lambda: _split(512, 1), lambda: _split(128, 2)
    )


workload = Workload(
    name="image_classifier",
    description="a residual convnet with batch norms and global average pooling",
    record=record,
    load_dataset=load_dataset,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=16,
    shuffle_state=4,
)
