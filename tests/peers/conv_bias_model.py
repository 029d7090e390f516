"""A model of one's own whose convolution has a bias and feeds a batch norm, as many
PyTorch models are written: the batch norm subtracts the bias right back, so its true
gradient is zero and both frameworks compute rounding noise for it."""

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
from topos.datasets.synthetic import synthetic_dataset
from topos.training import ConstantRate, Recording, Workload


def record(tape: Tape, rows: int, dtype=np.float32) -> Recording:
    conv = Conv2d(
        tape,
        init.kaiming(1)([8, 3, 3, 3]).astype(dtype),
        Tensor.filled([8], 0.1, dtype=dtype),
        padding=1,
        name="conv",
    )
    bn = BatchNorm2d(tape, 8, name="bn", dtype=dtype)
    head = Linear(
        tape,
        init.xavier(2)([8, 4]).astype(dtype),
        Tensor.filled([4], 0.0, dtype=dtype),
        name="head",
    )
    images = tape.input(Tensor.filled([rows, 3, 8, 8], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, 4, dtype=dtype))
    x = bn.express(conv.express(images)).relu()
    logits = head.express(adaptive_avg_pool2d(x, 1).reshape(rows, 8))
    return Recording(
        images.symbol,
        targets.symbol,
        logits.symbol,
        cross_entropy(logits, targets).symbol,
        tape.named_parameters(),
    )


def load_dataset(directory):
    return synthetic_dataset(
        "convbn", 3, (3, 8, 8), (256, 32), 4, mean=(0.5,) * 3, deviation=(0.25,) * 3
    )


workload = Workload(
    name="convbn",
    description="conv bias into batch norm",
    record=record,
    load_dataset=load_dataset,
    learning_rate=ConstantRate(0.05),
    batch_size=16,
    shuffle_state=1,
)
