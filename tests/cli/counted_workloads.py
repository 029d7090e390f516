"""Workloads for the instruction-count tests, written as a user writes a workload: the
tiny perceptron, one with a layer more (more work a step), one that does a great deal
of work before its first step (which must not be counted), and one whose second shard
runs in a process of its own (whose work must be)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tests.cli.tiny_workloads import BATCH, CLASSES, HIDDEN, SIDE, record, tiny
from topos import Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.training import Recording

plain = tiny


def _deeper(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
    weights = init.kaiming(41)
    first = Linear(
        tape, weights(Shape([SIDE * SIDE, HIDDEN])).astype(dtype), weights(Shape([HIDDEN]))
    )
    middle = Linear(tape, weights(Shape([HIDDEN, HIDDEN])).astype(dtype), weights(Shape([HIDDEN])))
    last = Linear(tape, weights(Shape([HIDDEN, CLASSES])).astype(dtype), weights(Shape([CLASSES])))
    images = tape.input(Tensor.filled([rows, 1, SIDE, SIDE], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, 1.0, dtype=dtype))
    hidden = first.express(images.reshape(rows, SIDE * SIDE)).relu()
    logits = last.express(middle.express(hidden).relu())
    loss = cross_entropy(logits, targets)
    parameters = first.parameters() + middle.parameters() + last.parameters()
    return Recording(images.symbol, targets.symbol, logits.symbol, loss.symbol, parameters)


deeper = dataclasses.replace(tiny, name="deeper", record=_deeper)


def _record_after_much_work(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
    # Work before the first step, as a user's model may do (a vocabulary built, weights
    # read): none of it is any step's.
    total = 0
    for number in range(200_000):
        total += number * number
    np.linalg.svd(np.ones((64, 64)) + total % 7)
    return record(tape, rows, dtype=dtype)


slow_to_record = dataclasses.replace(tiny, record=_record_after_much_work)

sharded_in_processes = dataclasses.replace(tiny, shards=2, shard_processes=True)

assert BATCH % 2 == 0
