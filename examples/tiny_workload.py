"""A tiny workload: the whole protocol in one screen, for users writing their own.

Grade it with: `PYTHONPATH=examples topos grade --workload tiny_workload:workload --steps 50`
"""

from __future__ import annotations

import numpy as np

from topos import Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.datasets import Dataset, Split
from topos.training import Recording, StepSchedule, Workload

SIDE, CLASSES = 4, 2


def record(tape: Tape, rows: int, dtype=np.float32) -> Recording:
    """A two-layer perceptron over 4x4 single-channel images, in `dtype` (`topos check`
    records it in float64: accepting `dtype` is how a workload opts in)."""
    hidden_weights = init.kaiming(1)(Shape([SIDE * SIDE, 8])).astype(dtype)
    hidden = Linear(tape, hidden_weights, Tensor.filled([8], 0.0, dtype=dtype))
    head_weights = init.xavier(2)(Shape([8, CLASSES])).astype(dtype)
    head = Linear(tape, head_weights, Tensor.filled([CLASSES], 0.0, dtype=dtype))
    images = tape.input(Tensor.filled([rows, 1, SIDE, SIDE], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, dtype=dtype))
    logits = head.express(hidden.express(images.reshape(rows, SIDE * SIDE)).relu())
    loss = cross_entropy(logits, targets)
    parameters = hidden.parameters() + head.parameters()
    return Recording(images.symbol, targets.symbol, logits.symbol, loss.symbol, parameters)


def split(count: int) -> Split:
    """Bright-top images are class 0, bright-bottom ones class 1 (deterministic)."""
    labels = np.arange(count) % CLASSES
    pixels = np.full((count, 1, SIDE, SIDE), 40, dtype=np.uint8)
    pixels[labels == 0, :, : SIDE // 2] = 220
    pixels[labels == 1, :, SIDE // 2 :] = 220
    pixels[:, :, :, ::2] ^= (np.arange(count, dtype=np.uint8) % 32)[:, None, None, None]
    return Split(pixels, labels, CLASSES, mean=(0.5,), deviation=(0.25,))


def load_dataset(directory: str | None) -> Dataset:
    """The tiny set has no files; a directory is refused rather than ignored."""
    if directory is not None:
        raise ValueError("the tiny workload reads no files; drop --data")
    return Dataset("tiny", "synthetic", "synthetic", lambda: split(1024), lambda: split(256))


workload = Workload(
    name="tiny",
    description="a two-layer perceptron telling bright-top from bright-bottom 4x4 images",
    record=record,
    load_dataset=load_dataset,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=32,
    shuffle_state=7,
)
