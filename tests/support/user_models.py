"""Two models written the way a user writes one from the docs, not built-ins.

`gru_workload` is a GRU character model unrolled over `POSITIONS` positions (a
recurrent cell: sigmoids, tanh, products of gates and state); `resnet_workload` is a
residual convnet with a hand-written batch norm (batch statistics through `mean`,
`sqrt` and a division) and global average pooling. Both are correct models: their
gradients are right and their peers agree with them; the tests use them to show that
topos's verdicts on such models are right too. Both take a `dtype` (so `topos check`
can record them in float64) and have a deterministic synthetic dataset of their own.

Name them on the command line as `tests.support.user_models:gru_workload` (with the
repository's root on PYTHONPATH), or import them.
"""

from __future__ import annotations

import numpy as np

from topos import Embedding, Linear, Shape, Tape, Tensor, concat, conv2d, cross_entropy, init
from topos.datasets import Dataset, Split, TextDataset, TextSplit
from topos.indices import Indices
from topos.splitmix64 import SplitMix64
from topos.training import ConstantRate, Recording, StepSchedule, Workload

# ----------------------------------------------------------------------------- GRU

POSITIONS = 12  # characters a window predicts
HIDDEN = 32
EMBEDDING = 16
TEXT = "the quick brown fox jumps over the lazy dog; " * 40


def record_gru(tape: Tape, rows: int, dtype=np.float32, vocabulary: int = 0) -> Recording:
    """A one-layer GRU over `POSITIONS` characters, unrolled, with a linear head on every
    position's state; the mean cross-entropy of the next character."""
    vocabulary = vocabulary or len(set(TEXT))
    seeds = iter(range(300, 400))

    def weight(inputs: int, outputs: int):
        return init.uniform(next(seeds), 1.0 / np.sqrt(HIDDEN))(Shape([inputs, outputs])).astype(
            dtype
        )

    def gate(name: str, inputs: int, bias: bool = True) -> Linear:
        bias_payload = Tensor.filled([HIDDEN], 0.0, dtype=dtype) if bias else None
        return Linear(tape, weight(inputs, HIDDEN), bias_payload, f"gru.{name}")

    embed = Embedding(tape, weight(vocabulary, EMBEDDING), "embed.weight")
    w_ir, w_iz, w_in = (gate(n, EMBEDDING) for n in ("w_ir", "w_iz", "w_in"))
    w_hr, w_hz, w_hn = (gate(n, HIDDEN, bias=False) for n in ("w_hr", "w_hz", "w_hn"))
    head = Linear(tape, weight(HIDDEN, vocabulary), None, "head")

    tokens = tape.input(Indices.zeros([rows, POSITIONS], vocabulary))
    targets = tape.input(Indices.zeros([rows, POSITIONS], vocabulary))
    embedded = embed.express(tokens)  # [rows, positions, embedding]
    state = tape.leaf(Tensor.filled([rows, HIDDEN], 0.0, dtype=dtype))
    logits = []
    for position in range(POSITIONS):
        x = embedded.narrow(1, position, 1).reshape(rows, EMBEDDING)
        reset = (w_ir.express(x) + w_hr.express(state)).sigmoid()
        update = (w_iz.express(x) + w_hz.express(state)).sigmoid()
        candidate = (w_in.express(x) + reset * w_hn.express(state)).tanh()
        state = (1.0 - update) * candidate + update * state
        logits.append(head.express(state).reshape(rows, 1, vocabulary))
    every = concat(logits, axis=1)  # [rows, positions, vocabulary]
    loss = cross_entropy(every, targets)
    return Recording(
        loss=loss.symbol,
        parameters=tape.named_parameters(),
        inputs={"tokens": tokens.symbol, "targets": targets.symbol},
        outputs={"logits": every.symbol},
    )


def _load_text(directory: str | None) -> TextDataset:
    if directory is not None:
        raise ValueError("the GRU test workload reads no files; drop --data")
    return TextDataset("synthetic", "synthetic", TEXT)


class _Offsets:
    """Window offsets drawn from splitmix64, a pure function of the step."""

    def __init__(self, split: TextSplit, batch: int, seed: int) -> None:
        self.starts = len(split) - POSITIONS
        self.batch = batch
        self.seed = seed

    def indices(self, step: int) -> np.ndarray:
        draws = SplitMix64(self.seed * 1_000_003 + step).draws(self.batch)
        return (draws % np.uint64(self.starts)).astype(np.int64)


def _text_feeds(split: TextSplit, offsets: np.ndarray, recording: Recording) -> dict:
    windows = split.windows(offsets, POSITIONS + 1)
    tokens, targets = windows[:, :POSITIONS], windows[:, 1:]
    return {
        recording.inputs["tokens"]: Indices(tokens.shape, tokens, split.classes),
        recording.inputs["targets"]: Indices(targets.shape, targets, split.classes),
    }


gru_workload = Workload(
    name="user_gru",
    description="a GRU character model unrolled over 12 positions (a test's model)",
    record=record_gru,
    load_dataset=_load_text,
    learning_rate=ConstantRate(0.5),
    batch_size=8,
    feeds=_text_feeds,
    shuffle_state=2,
    batches=_Offsets,
)

# -------------------------------------------------------------------------- ResNet

CHANNELS = 8
SIDE = 8
CLASSES = 4


def _batch_norm(x, scale, shift, epsilon: float = 1e-5):
    """Batch statistics over the batch and both spatial axes, as a user writes it."""
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=(0, 2, 3), keepdims=True)
    return centred / (variance + epsilon).sqrt() * scale + shift


def record_resnet(tape: Tape, rows: int, dtype=np.float32) -> Recording:
    """A stem convolution, one residual block of two batch-normed convolutions, global
    average pooling and a linear head, over 3x8x8 images."""
    seeds = iter(range(500, 600))

    def kernel(inputs: int, outputs: int):
        deviation = np.sqrt(2.0 / (inputs * 9))
        return init.normal(next(seeds), deviation)(Shape([outputs, inputs, 3, 3])).astype(dtype)

    def norm_parameters(name: str):
        scale = tape.parameter(Tensor.filled([1, CHANNELS, 1, 1], 1.0, dtype=dtype), f"{name}.w")
        shift = tape.parameter(Tensor.filled([1, CHANNELS, 1, 1], 0.0, dtype=dtype), f"{name}.b")
        return scale, shift

    stem = tape.parameter(kernel(3, CHANNELS), "stem.weight")
    first = tape.parameter(kernel(CHANNELS, CHANNELS), "block.conv1.weight")
    second = tape.parameter(kernel(CHANNELS, CHANNELS), "block.conv2.weight")
    norms = [norm_parameters(name) for name in ("bn0", "bn1", "bn2")]
    head_weights = init.xavier(next(seeds))(Shape([CHANNELS, CLASSES])).astype(dtype)
    head = Linear(tape, head_weights, Tensor.filled([CLASSES], 0.0, dtype=dtype), "head")

    images = tape.input(Tensor.filled([rows, 3, SIDE, SIDE], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, dtype=dtype))
    x = _batch_norm(conv2d(images, stem, padding=1), *norms[0]).relu()
    inner = _batch_norm(conv2d(x, first, padding=1), *norms[1]).relu()
    inner = _batch_norm(conv2d(inner, second, padding=1), *norms[2])
    x = (x + inner).relu()
    pooled = x.mean(axis=(2, 3))  # global average pooling: [rows, channels]
    logits = head.express(pooled)
    loss = cross_entropy(logits, targets)
    return Recording(
        images.symbol, targets.symbol, logits.symbol, loss.symbol, tape.named_parameters()
    )


def _image_split(count: int, seed: int) -> Split:
    """Class k's images are brightest in quadrant k, with splitmix64 noise."""
    labels = np.arange(count) % CLASSES
    noise = SplitMix64(seed).draws(count * 3 * SIDE * SIDE) % np.uint64(96)
    pixels = noise.astype(np.uint8).reshape(count, 3, SIDE, SIDE)
    half = SIDE // 2
    for k in range(CLASSES):
        rows, columns = divmod(k, 2)
        pixels[
            labels == k, :, rows * half : (rows + 1) * half, columns * half : (columns + 1) * half
        ] += 120
    return Split(pixels, labels, CLASSES, mean=(0.4, 0.4, 0.4), deviation=(0.25, 0.25, 0.25))


def _load_images(directory: str | None) -> Dataset:
    if directory is not None:
        raise ValueError("the ResNet test workload reads no files; drop --data")
    return Dataset(
        "quadrants",
        "synthetic",
        "synthetic",
        lambda: _image_split(512, 1),
        lambda: _image_split(128, 2),
    )


resnet_workload = Workload(
    name="user_resnet",
    description="a residual convnet with a hand-written batch norm (a test's model)",
    record=record_resnet,
    load_dataset=_load_images,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=16,
    shuffle_state=4,
)
