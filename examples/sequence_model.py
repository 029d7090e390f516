"""A recurrent sequence model of your own, graded by topos: the template.

Everything a sequence workload needs, in one file: an LSTM unrolled over a fixed length
with a linear head on its last state, written as a PyTorch user writes one; its own
deterministic sequences (two sensors' readings over 12 steps, whose frequency is the
class), kept as a `Split` of `[count, sensors, steps, 1]` readings; and Adam at a
constant rate. Grade it from the repository's root with

    PYTHONPATH=examples topos grade --workload sequence_model:workload --steps 50

and check its derivatives with `PYTHONPATH=examples topos check --workload
sequence_model:workload`.
"""

from __future__ import annotations

import numpy as np

from topos import LSTM, Adam, Linear, Tape, Tensor, cross_entropy, init
from topos.datasets import Dataset, Split
from topos.splitmix64 import SplitMix64
from topos.training import ConstantRate, Recording, Workload

STEPS = 12  # readings a sequence
SENSORS = 2
HIDDEN = 16
CLASSES = 4


def record(tape: Tape, rows: int, dtype=np.float32) -> Recording:
    """The LSTM and its loss over `rows` sequences, in `dtype` (`topos check` records it
    in float64)."""
    lstm = LSTM(tape, SENSORS, HIDDEN, batch_first=True, seed=900, name="lstm", dtype=dtype)
    head_weights = init.xavier(901)([HIDDEN, CLASSES]).astype(dtype)
    head = Linear(tape, head_weights, Tensor.filled([CLASSES], 0.0, dtype=dtype), "fc")

    readings = tape.input(Tensor.filled([rows, SENSORS, STEPS, 1], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, dtype=dtype))
    sequences = readings.reshape(rows, SENSORS, STEPS).permute(0, 2, 1)  # [N, T, sensors]
    _, (last, _) = lstm.express(sequences)  # last: [layers, N, HIDDEN]
    logits = head.express(last.reshape(rows, HIDDEN))
    loss = cross_entropy(logits, targets)
    return Recording(
        readings.symbol, targets.symbol, logits.symbol, loss.symbol, tape.named_parameters()
    )


def _split(count: int, seed: int) -> Split:
    """Class k's readings are a sine and a cosine of k + 1 cycles over the sequence, at a
    random phase, over splitmix64 noise, as bytes."""
    labels = np.arange(count) % CLASSES
    draws = SplitMix64(seed).draws(count * (1 + SENSORS * STEPS))
    phases = (draws[:count] % np.uint64(360)).astype(np.float64) * np.pi / 180.0
    noise = (draws[count:] % np.uint64(41)).astype(np.float64).reshape(count, SENSORS, STEPS)
    angles = 2.0 * np.pi * (labels[:, None] + 1) * np.arange(STEPS) / STEPS + phases[:, None]
    waves = np.stack([np.sin(angles), np.cos(angles)], axis=1)  # [count, sensors, steps]
    readings = np.clip(128.0 + 80.0 * waves + noise - 20.0, 0, 255).astype(np.uint8)
    return Split(readings[..., None], labels, CLASSES, mean=(0.5, 0.5), deviation=(0.25, 0.25))


def load_dataset(directory: str | None) -> Dataset:
    """The workload's own sequences (it reads no files)."""
    if directory is not None:
        raise ValueError("the sequence model template makes its own sequences; drop --data")
    return Dataset(
        "waves", "synthetic", "synthetic", lambda: _split(512, 3), lambda: _split(128, 4)
    )


workload = Workload(
    name="sequence_model",
    description="an LSTM telling four frequencies apart over sequences of its own",
    record=record,
    load_dataset=load_dataset,
    learning_rate=ConstantRate(0.03),
    batch_size=16,
    optimizer=lambda: Adam(0.03),
    shuffle_state=6,
)
