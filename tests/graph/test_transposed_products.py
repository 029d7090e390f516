"""A product with a transposed operand (`x @ w.T`, `a.T @ b`, attention's `q @ k^T`),
written as a user writes one, is recorded on the operand itself by `matmul_nt` or
`matmul_tn`, which BLAS reads transposed where it lies: no swapped view copied into a
contiguous one every run. Values and gradients are the product's (finite differences,
float64), and the engine and recorded routes give the same bits."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.routes import ROUTES, finite_differences, operations
from topos import Tape, Tensor


def _linear_as_pytorch_writes_it(tape, tensors):
    # PyTorch's Linear: the weight is [out, in], applied as x @ W^T.
    x = tape.input(tensors[0])
    weight = tape.parameter(tensors[1])
    return (x @ weight.T).tanh(), [weight.symbol]


def _left_transposed(tape, tensors):
    a = tape.parameter(tensors[0])
    b = tape.parameter(tensors[1])
    return a.transpose() @ b, [a.symbol, b.symbol]


def _attention_scores(tape, tensors):
    q = tape.parameter(tensors[0])
    k = tape.parameter(tensors[1])
    return (q @ k.transpose()).tanh(), [q.symbol, k.symbol]


CASES = {
    "x @ W.T": (_linear_as_pytorch_writes_it, [(5, 3), (4, 3)], "matmul_nt"),
    "A.T @ B": (_left_transposed, [(3, 4), (3, 2)], "matmul_tn"),
    "q @ k^T, batched": (_attention_scores, [(2, 5, 3), (2, 6, 3)], "matmul_nt"),
}


def _arrays(shapes, seed=0):
    generator = np.random.default_rng(seed)
    return [generator.normal(0, 0.7, shape) for shape in shapes]


@pytest.mark.parametrize("case", CASES)
def test_the_transposed_operand_is_multiplied_where_it_lies(case):
    build, shapes, primitive = CASES[case]
    recorded = operations(build, _arrays(shapes))
    assert primitive in recorded and "matmul" not in recorded
    # The swapped view is recorded (the user wrote it) but no kernel reads it, so no
    # plan evaluates it.
    tape = Tape(dtype=np.float64)
    output, _ = build(
        tape, [Tensor(s, a, dtype=np.float64) for s, a in zip(shapes, _arrays(shapes))]
    )
    network = tape.into_network()
    plan = network.entry([output.symbol]).lower()
    assert all(network.nodes[i].operation != "permute" for i in plan.evaluated)


@pytest.mark.parametrize("case", CASES)
def test_values_and_gradients_are_the_products(case):
    build, shapes, _ = CASES[case]
    arrays = _arrays(shapes, seed=1)
    engine = ROUTES["engine"](build, arrays, 2, np.float64)
    recorded = ROUTES["recorded"](build, arrays, 2, np.float64)
    expected = finite_differences(build, arrays, 2)
    for got, want in zip(recorded.gradients, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    # The routes share the kernels: the same bits, in float32 as in float64.
    assert np.array_equal(engine.loss, recorded.loss)
    float32 = [ROUTES[route](build, arrays, 2, np.float32) for route in ("engine", "recorded")]
    assert float32[0].loss.tobytes() == float32[1].loss.tobytes()
    for first, second in zip(float32[0].gradients, float32[1].gradients, strict=True):
        assert first.tobytes() == second.tobytes()


def test_a_permutation_other_than_the_last_two_axes_is_a_plain_product():
    def build(tape, tensors):
        a = tape.parameter(tensors[0])
        b = tape.parameter(tensors[1])
        return a.permute(1, 0, 2) @ b, [a.symbol, b.symbol]

    recorded = operations(build, _arrays([(3, 2, 4), (2, 4, 5)]))
    assert "matmul" in recorded and not {"matmul_nt", "matmul_tn"} & recorded
