"""GRUCell, GRU, LSTMCell and LSTM (issue 46): PyTorch's layers, given our parameters,
compute our values in float64; finite differences by both routes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.test_derivatives import check_against_finite_differences
from tests.support.cases import Case
from tests.support.routes import ROUTES
from topos import GRU, LSTM, GRUCell, LSTMCell, ShapeError, Tape, Tensor
from topos.ops.example import normal

RNG = np.random.default_rng(46)
SEQUENCE = RNG.standard_normal((3, 5, 4))  # [N, T, I], batch first


def _run(build, *arrays):
    """Records `build(tape, *leaves)` in float64; its outputs' values and the named
    parameters' payloads."""
    tape = Tape(dtype=np.float64)
    leaves = [tape.leaf(Tensor(a.shape, a, dtype=np.float64)) for a in arrays]
    outputs = build(tape, *leaves)
    network = tape.into_network()
    parameters = network.parameters()
    run = network.entry([o.symbol for o in outputs]).lower().forward(parameters)
    named = {name: tensor.numpy() for name, tensor in parameters.named().items()}
    return [run.of(o.symbol).numpy() for o in outputs], named


def _load(module, named, prefix):
    import torch

    with torch.no_grad():
        for name, parameter in module.named_parameters():
            parameter.copy_(torch.tensor(named[f"{prefix}.{name}"]))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_the_layers_are_torchs(kind):
    torch = pytest.importorskip("torch")
    initial = RNG.standard_normal((2, 3, 6))

    def build(tape, x, h0):
        if kind == "gru":
            output, final = GRU(tape, 4, 6, 2, batch_first=True, seed=3, name="rnn").express(x, h0)
            return [output, final]
        layer = LSTM(tape, 4, 6, 2, batch_first=True, seed=3, name="rnn")
        output, (final, memory) = layer.express(x, (h0, h0 * 0.5))
        return [output, final, memory]

    ours, named = _run(build, SEQUENCE, initial)
    twin_kind = torch.nn.GRU if kind == "gru" else torch.nn.LSTM
    twin = twin_kind(4, 6, 2, batch_first=True).double()
    _load(twin, named, "rnn")
    start = torch.tensor(initial)
    with torch.no_grad():
        if kind == "gru":
            output, final = twin(torch.tensor(SEQUENCE), start)
            theirs = [output, final]
        else:
            output, (final, memory) = twin(torch.tensor(SEQUENCE), (start, start * 0.5))
            theirs = [output, final, memory]
    for position, (mine, expected) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(
            mine, expected.numpy(), rtol=1e-10, atol=1e-12, err_msg=str(position)
        )


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_the_cells_are_torchs_from_zero_state(kind):
    torch = pytest.importorskip("torch")
    rows = SEQUENCE[:, 0]

    def build(tape, x):
        if kind == "gru":
            return [GRUCell(tape, 4, 6, seed=1, name="cell").express(x)]
        return list(LSTMCell(tape, 4, 6, bias=False, seed=1, name="cell").express(x))

    ours, named = _run(build, rows)
    twin = torch.nn.GRUCell(4, 6) if kind == "gru" else torch.nn.LSTMCell(4, 6, bias=False)
    twin = twin.double()
    _load(twin, named, "cell")
    with torch.no_grad():
        theirs = twin(torch.tensor(rows))
    theirs = [theirs] if kind == "gru" else list(theirs)
    for mine, expected in zip(ours, theirs):
        np.testing.assert_allclose(mine, expected.numpy(), rtol=1e-10, atol=1e-12)


def _recurrent_case(kind):
    """The layer's own parameters stay as drawn; the sequence is differentiated, through
    every gate of every position."""

    def build(tape, tensors):
        sequence = tape.parameter(tensors[0])
        layer = (GRU if kind == "gru" else LSTM)(tape, 3, 4, seed=2)
        output, _ = layer.express(sequence * 2.0)
        return (output * output).sum(), [sequence.symbol]

    return build


CASES = [
    Case(f"{kind}_layer", "sigmoid", normal((4, 2, 3)), _recurrent_case(kind))
    for kind in ("gru", "lstm")
]


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_recurrent_layers_match_finite_differences(case, route):
    check_against_finite_differences(case, route)


def test_bad_inputs_are_named():
    tape = Tape()
    layer = GRU(tape, 4, 6)
    with pytest.raises(ShapeError, match=r"GRU: input \[2, 3\] must be \[T, N, I\] with I = 4"):
        layer.express(tape.input(Tensor.filled([2, 3], 0.0)))
    with pytest.raises(ValueError, match="bidirectional=True is not supported yet"):
        LSTM(tape, 4, 6, bidirectional=True)
    with pytest.raises(ShapeError, match=r"LSTMCell\(4, 6\): input \[2, 5\]"):
        LSTMCell(tape, 4, 6).express(tape.input(Tensor.filled([2, 5], 0.0)))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_every_parameters_gradient_matches_finite_differences_with_one_bias_broadcast(kind):
    # The hidden bias is broadcast down the batch once a recording, and every position
    # adds that one node: its gradient is then the column sum of all the positions'
    # gradients together. Each parameter's gradient, the biases' above all, must still
    # be the derivative.
    from tests.support.routes import finite_differences

    def build(tape, tensors):
        sequence = tape.leaf(tensors[0])
        layer = (GRU if kind == "gru" else LSTM)(tape, 3, 2, seed=5, name="rnn")
        output, _ = layer.express(sequence)
        return output.tanh(), layer.parameters()

    arrays = [RNG.standard_normal((4, 2, 3))]  # four positions, time major
    tape = Tape(dtype=np.float64)
    build(tape, [Tensor(arrays[0].shape, arrays[0], dtype=np.float64)])
    bias_hh = tape.names["rnn.bias_hh_l0"]
    broadcasts = [
        node for node in tape.nodes if node.operation == "broadcast" and node.inputs == (bias_hh,)
    ]
    assert len(broadcasts) == 1
    expected = finite_differences(build, arrays, 3)
    for route in sorted(ROUTES):
        got = ROUTES[route](build, arrays, 3, np.float64).gradients
        for gradient, want in zip(got, expected, strict=True):
            np.testing.assert_allclose(gradient, want, rtol=1e-6, atol=1e-8)
