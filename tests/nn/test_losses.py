"""The losses a PyTorch user reaches for (issue 46): mse_loss, l1_loss, nll_loss with
log_softmax, binary_cross_entropy_with_logits and cross_entropy's label smoothing, each
against torch.nn.functional in float64 and against finite differences by both routes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.test_derivatives import check_against_finite_differences
from tests.support.cases import Case
from tests.support.routes import ROUTES
from topos import (
    Indices,
    ShapeError,
    Tape,
    Tensor,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    log_softmax,
    mse_loss,
    nll_loss,
)
from topos.ops.example import TOKENS, away_from_zero, normal, on_indices, on_parameters

RNG = np.random.default_rng(46)


def _evaluate(build):
    """The value of what `build(tape)` records, in float64, by a forward plan (inputs on
    the payloads they were recorded with, asked for on purpose)."""
    tape = Tape(dtype=np.float64)
    output = build(tape)
    network = tape.into_network()
    run = network.entry([output.symbol]).lower().forward(network.parameters(), defaults=True)
    return run.of(output.symbol).numpy()


def _leaf(tape, array):
    return tape.leaf(Tensor(array.shape, array, dtype=np.float64))


PREDICTION = RNG.standard_normal((4, 3))
TARGET = RNG.standard_normal((4, 3))
PROBABILITIES = RNG.uniform(0.0, 1.0, (4, 3))
LOGITS = RNG.standard_normal((2, 4, 5)) * 3.0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_and_logistic_losses_are_torchs(reduction):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    big = PREDICTION * 40.0  # exp(-|x|) must not overflow nor the loss lose its value
    pairs = [
        (mse_loss, functional.mse_loss, PREDICTION, TARGET),
        (l1_loss, functional.l1_loss, PREDICTION, TARGET),
        (
            binary_cross_entropy_with_logits,
            functional.binary_cross_entropy_with_logits,
            big,
            PROBABILITIES,
        ),
    ]
    for ours, theirs, x, y in pairs:
        value = _evaluate(
            lambda tape, ours=ours, x=x, y=y: ours(_leaf(tape, x), _leaf(tape, y), reduction)
        )
        expected = theirs(torch.tensor(x), torch.tensor(y), reduction=reduction).numpy()
        np.testing.assert_allclose(value, expected, rtol=1e-12, err_msg=ours.__name__)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_cross_entropy_and_nll_loss_are_torchs_over_class_indices(smoothing):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    indices = Indices.of(TOKENS, 5)

    def ours(tape, loss):
        logits = _leaf(tape, LOGITS)
        targets = tape.input(indices)
        if loss == "nll":
            return nll_loss(log_softmax(logits), targets)
        return cross_entropy(logits, targets, label_smoothing=smoothing)

    flat = torch.tensor(LOGITS.reshape(-1, 5))
    labels = torch.tensor(TOKENS.reshape(-1))
    expected = functional.cross_entropy(flat, labels, label_smoothing=smoothing).numpy()
    np.testing.assert_allclose(_evaluate(lambda tape: ours(tape, "ce")), expected, rtol=1e-12)
    nll = functional.nll_loss(functional.log_softmax(flat, dim=-1), labels).numpy()
    np.testing.assert_allclose(_evaluate(lambda tape: ours(tape, "nll")), nll, rtol=1e-12)


def test_label_smoothing_over_one_hot_rows_is_torchs():
    torch = pytest.importorskip("torch")
    logits = LOGITS[0]
    one_hot = np.eye(5)[TOKENS[0]]
    value = _evaluate(
        lambda tape: cross_entropy(_leaf(tape, logits), _leaf(tape, one_hot), label_smoothing=0.2)
    )
    expected = torch.nn.functional.cross_entropy(
        torch.tensor(logits), torch.tensor(one_hot), label_smoothing=0.2
    )
    np.testing.assert_allclose(value, expected.numpy(), rtol=1e-12)
    picked = _evaluate(lambda tape: nll_loss(_leaf(tape, logits), _leaf(tape, one_hot), "sum"))
    np.testing.assert_allclose(picked, -np.sum(logits * one_hot), rtol=1e-12)


CASES = [
    Case("mse_loss", "sub", normal((3, 4), (3, 4)), on_parameters(mse_loss)),
    Case("l1_loss", "abs", away_from_zero((3, 4), (3, 4)), on_parameters(l1_loss)),
    Case(
        "bce_with_logits",
        "abs",
        away_from_zero((3, 4), (3, 4)),
        on_parameters(lambda x, y: binary_cross_entropy_with_logits(x * 3.0, y.sigmoid())),
    ),
    Case(
        "nll_log_softmax",
        "pick_class",
        normal((2, 4, 5)),
        on_indices(lambda targets, x: nll_loss(log_softmax(x), targets)),
    ),
    Case(
        "label_smoothing",
        "pick_class",
        normal((2, 4, 5)),
        on_indices(lambda targets, x: cross_entropy(x, targets, label_smoothing=0.15)),
    ),
]


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_losses_match_finite_differences(case, route):
    check_against_finite_differences(case, route)


def test_bad_arguments_are_named():
    tape = Tape()
    x = tape.input(Tensor.filled([2, 3], 0.0))
    y = tape.input(Tensor.filled([3, 2], 0.0))
    with pytest.raises(ShapeError, match=r"mse_loss: input \[2, 3\] and target \[3, 2\]"):
        mse_loss(x, y)
    with pytest.raises(ValueError, match="l1_loss: reduction 'average' is not one of"):
        l1_loss(x, x, reduction="average")
    with pytest.raises(ValueError, match=r"label_smoothing 1\.5 must lie in"):
        cross_entropy(x, x, label_smoothing=1.5)
    with pytest.raises(TypeError, match="target must be a recorded value"):
        mse_loss(x, np.zeros((2, 3)))
