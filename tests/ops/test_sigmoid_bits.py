"""The logistic kernel (sigmoid's and silu's) against its definition, `1 / (1 + exp(-x))`
written with NumPy's divide: the same bits for every float32 and float64 input the kernel
may meet, in contiguous and strided operands. Equal by construction (DESIGN.md, "Bits"):
the same negative, exp and add, and `reciprocal` is the one IEEE division `1 / x`,
correctly rounded on every CPU, that `divide(1, x)` is; no summation order is involved."""

from __future__ import annotations

import numpy as np
import pytest

from topos.ops.primitives.sigmoid import logistic


def _definition(values: np.ndarray) -> np.ndarray:
    kind = values.dtype.type
    with np.errstate(over="ignore"):
        return np.divide(kind(1), np.add(np.exp(np.negative(values)), kind(1)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_gives_the_definitions_bits(dtype):
    generator = np.random.default_rng(7)
    values = np.concatenate(
        [
            generator.normal(0, 4, 100_000),
            generator.uniform(-800, 800, 20_000),  # past both overflows
            [0.0, -0.0, 1e-40, -1e-40, 88.7, -88.7, 89.0, -89.0, 710.0, -710.0],
            [np.inf, -np.inf, np.nan],
        ]
    ).astype(dtype)
    got = logistic(values, np.empty_like(values))
    assert np.array_equal(got.view(np.uint8), _definition(values).view(np.uint8))
    assert got[values < -750].max() == 0 and got[values > 50].min() == 1


def test_a_strided_operand_and_a_fresh_output_agree_with_the_definition():
    gates = np.random.default_rng(3).normal(0, 3, (16, 64)).astype(np.float32)
    forget = gates[:, 16:32]  # a gate's columns, as a recurrent cell narrows them
    assert not forget.flags.c_contiguous
    got = logistic(forget)
    assert np.array_equal(got.view(np.uint32), _definition(forget).view(np.uint32))
