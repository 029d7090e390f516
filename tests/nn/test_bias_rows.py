"""A layer expressed more than once on a tape (a cell unrolled by hand, as a user writes
one) broadcasts its bias once per row count, and every use adds that one node: the
gradients are still the derivative, and a node the tape forgot is made again."""

from __future__ import annotations

import numpy as np

from tests.support.routes import ROUTES, finite_differences
from topos import Linear, Tape, Tensor
from topos.nn.bias_rows import BiasRows


def _unrolled(tape, tensors):
    # One Linear applied at three positions, and once more to a batch of other rows.
    x = tape.leaf(tensors[0])
    layer = Linear(
        tape,
        Tensor(tensors[1].shape, tensors[1].numpy(), dtype=tape.dtype),
        Tensor(tensors[2].shape, tensors[2].numpy(), dtype=tape.dtype),
        "cell",
    )
    state = x
    for _ in range(3):
        state = layer.express(state).tanh()
    wider = layer.express(tape.leaf(tensors[3]))  # two rows: a broadcast of its own
    symbols = list(tape.named_parameters().values())
    return (state.sum() + wider.sum()).reshape(1), symbols


def _arrays(seed=0):
    generator = np.random.default_rng(seed)
    return [
        generator.normal(0, 0.6, (4, 3)),
        generator.normal(0, 0.6, (3, 3)),
        generator.normal(0, 0.3, (3,)),
        generator.normal(0, 0.6, (2, 3)),
    ]


def test_one_broadcast_per_row_count_and_gradients_are_the_derivative():
    arrays = _arrays()
    tape = Tape(dtype=np.float64)
    _unrolled(tape, [Tensor(a.shape, a, dtype=np.float64) for a in arrays])
    bias = tape.names["cell.bias"]
    sizes = [
        node.attributes["size"]
        for node in tape.nodes
        if node.operation == "broadcast" and node.inputs == (bias,)
    ]
    assert sorted(sizes) == [2, 4]
    expected = finite_differences(_unrolled, arrays, 1)
    for route in sorted(ROUTES):
        got = ROUTES[route](_unrolled, arrays, 1, np.float64).gradients
        for gradient, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(gradient, want, rtol=1e-6, atol=1e-8)


def test_a_broadcast_the_tape_forgot_is_made_again():
    tape = Tape(dtype=np.float64)
    bias = tape.parameter(Tensor.filled([3], 0.5, dtype=np.float64))
    rows = BiasRows(bias)
    first = rows.down(4)
    assert rows.down(4).index == first.index
    tape.truncate(first.index)  # as after a failed differentiate
    again = rows.down(4)
    node = tape.nodes[again.index]
    assert node.operation == "broadcast" and node.inputs == (bias.index,)
    assert node.attributes["size"] == 4
