"""Workloads for `topos check`'s tests: a model touching many primitives, one of them a
primitive of the user's own (`user_softplus`, registered here with its derivative rule).

Setting `TOPOS_BREAK_RULE=<primitive>` in a process that imports this module breaks
that primitive's derivative rule (its first gradient scaled by 1.5), so a real
`topos check` subprocess can be seen to name it. Tests in this process break rules
with `break_rule` under `monkeypatch` instead.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from topos import Conv2d, Linear, Shape, Tape, Tensor, cross_entropy, init, max_pool
from topos.datasets.synthetic import synthetic_dataset
from topos.ops import REGISTRY
from topos.ops.primitive import primitive
from topos.ops.shape_rules import same
from topos.training import Recording, StepSchedule, Workload

SIDE, CHANNELS, CLASSES, BATCH = 8, 2, 4, 8


def _derive_softplus(algebra, inputs, output, gradient, needs):
    # d softplus(x) = sigmoid(x) = 1 - exp(-softplus(x)), from the output alone.
    one = algebra.constant(1.0, Shape(()))
    return (algebra.mul(gradient, algebra.sub(one, algebra.exp(algebra.neg(output)))),)


def _softplus(operand, out=None):
    """log(1 + e**x), a user's own primitive."""
    return np.logaddexp(operand.dtype.type(0), operand, out=out)


def register_softplus() -> None:
    """Registers `user_softplus` unless it is (the tests' conftest unregisters it after them,
    so the project's every-primitive-has-a-case test never sees it)."""
    if "user_softplus" not in REGISTRY:
        primitive("user_softplus", 1, same, _derive_softplus)(_softplus)


def break_rule(operation: str):
    """A derivative rule for `operation` that scales its first gradient by 1.5 (a wrong
    factor, as a slip in a rule makes); returns it, to be installed by the caller."""
    original = REGISTRY[operation].derive

    def derive(algebra, inputs, output, gradient, needs, **attributes):
        parts = list(original(algebra, inputs, output, gradient, needs, **attributes))
        for position, part in enumerate(parts):
            if part is not None:
                factor = algebra.constant(1.5, algebra.shape(part))
                parts[position] = algebra.mul(part, factor)
                break
        return parts

    return derive


if os.environ.get("TOPOS_BREAK_RULE"):
    register_softplus()
    REGISTRY[os.environ["TOPOS_BREAK_RULE"]].derive = break_rule(os.environ["TOPOS_BREAK_RULE"])


def record(tape: Tape, rows: int, dtype: Any = np.float32) -> Recording:
    """conv -> max_pool -> relu -> conv pooled by lanes -> relu -> linear -> tanh scaled by
    exp -> linear -> softplus -> cross entropy: most primitives a model meets."""

    register_softplus()

    def weights(seed: int, shape: list[int], deviation: float) -> Tensor:
        return init.normal(seed, deviation)(Shape(shape)).astype(dtype)

    first = Conv2d(tape, weights(1, [3, CHANNELS, 3, 3], 0.4), weights(2, [3], 0.1), 1, 1)
    second = Conv2d(tape, weights(3, [4, 3, 3, 3], 0.3), weights(4, [4], 0.1), 1, 1)
    hidden = Linear(tape, weights(5, [16, 6], 0.4), weights(6, [6], 0.1))
    scale = tape.parameter(weights(7, [6], 0.2))
    head = Linear(tape, weights(8, [6, CLASSES], 0.5), weights(9, [CLASSES], 0.1))
    images = tape.input(Tensor.filled([rows, CHANNELS, SIDE, SIDE], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0] * rows, CLASSES, dtype=dtype))
    features = max_pool(first.express(images), 2, 2).relu()
    features = second.express_max_pooled(features, 2).relu()
    flat = features.reshape(rows, 16)
    activity = hidden.express(flat).tanh() * scale.exp().broadcast_along(0, rows)
    logits = tape.record("user_softplus", [head.express(activity)])
    loss = cross_entropy(logits, targets)
    parameters = [*first.parameters(), *second.parameters(), *hidden.parameters()]
    parameters += [scale.symbol, *head.parameters()]
    return Recording(images.symbol, targets.symbol, logits.symbol, loss.symbol, parameters)


def load_dataset(directory: str | None) -> object:
    """A synthetic 2x8x8 set of four classes."""
    return synthetic_dataset(
        "checked", 11, (CHANNELS, SIDE, SIDE), (64, 16), CLASSES, mean=(0.5, 0.5),
        deviation=(0.25, 0.25),
    )  # fmt: skip


many = Workload(
    name="many",
    description="most primitives, and softplus, a user's own",
    record=record,
    load_dataset=load_dataset,
    learning_rate=StepSchedule(0.1, 0.01),
    batch_size=BATCH,
    shuffle_state=3,
)
