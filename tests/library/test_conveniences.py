"""The conveniences a PyTorch or JAX user expects (issue 41): a `value_and_grad` step,
Adjoints and gradients read by parameter, `Parameters.replace`, gradients of gradients
and input gradients checked against float64 finite differences, and library errors in
the library's words, every one a top-level name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import topos
import topos.errors
from tests.support.user_models import record_gru, record_resnet
from topos import (
    SGD,
    GraphError,
    Indices,
    Linear,
    Shape,
    ShapeError,
    Tape,
    Tensor,
    cross_entropy,
    init,
    value_and_grad,
)
from topos.checking import check_gradients

ROWS = 2
ROOT = Path(__file__).resolve().parents[2]


def gru_feeds(network, recording):
    tokens, targets = recording.inputs["tokens"], recording.inputs["targets"]
    vocabulary = network.nodes[tokens.index].attributes["classes"]
    ids = np.arange(np.prod(tuple(network.shape(tokens)))).reshape(tuple(network.shape(tokens)))
    return {
        tokens: Indices(list(ids.shape), ids % vocabulary, vocabulary),
        targets: Indices(list(ids.shape), (ids + 1) % vocabulary, vocabulary),
    }


def bits(gradients, symbols) -> list[bytes]:
    return [gradients[symbol].numpy().tobytes() for symbol in symbols]


@pytest.mark.parametrize("route", ["recorded", "engine"])
def test_value_and_grad_trains_a_users_gru_as_the_routes_do_by_hand(route):
    tape = Tape()
    recording = record_gru(tape, ROWS)
    wrt = list(recording.parameters)
    step = value_and_grad(tape, recording.loss, wrt, route=route)
    assert step.route == route and tape.sealed
    feeds = gru_feeds(step.network, recording)
    parameters = step.parameters()
    losses = []
    for _ in range(3):
        loss, gradients = step(parameters, feeds)
        losses.append(float(loss))
        parameters = SGD(0.5).step(parameters, gradients)
    # By hand, the recorded route: the same kernels in the same order, the same bits.
    tape = Tape()
    recording = record_gru(tape, ROWS)
    adjoints = tape.differentiate(recording.loss, recording.parameters)
    network = tape.into_network()
    plan = network.entry(adjoints.roots()).lower()
    feeds = gru_feeds(network, recording)
    by_hand = network.parameters()
    for expected in losses:
        run = plan.forward(by_hand, feeds)
        assert float(run.of(recording.loss).scalar()) == expected
        by_hand = SGD(0.5).step(by_hand, run.recorded_gradients(adjoints))
    assert [p.numpy().tobytes() for _, p in by_hand.items()] == [
        p.numpy().tobytes() for _, p in parameters.items()
    ]


def test_value_and_grad_refuses_what_it_cannot_do():
    tape = Tape()
    recording = record_resnet(tape, ROWS)
    with pytest.raises(GraphError, match="route 'backprop' is not one of recorded, engine"):
        value_and_grad(tape, recording.loss, route="backprop")
    step = value_and_grad(tape, recording.loss)  # every parameter of the tape
    assert len(step.wrt) == len(recording.parameters)
    with pytest.raises(GraphError, match="no feed for 2 inputs"):
        step(step.parameters(), {})


def test_adjoints_and_gradients_are_read_by_parameter():
    tape = Tape()
    layer = Linear(tape, init.xavier(1)(Shape([3, 2])), Tensor.filled([2], 0.0))
    images = tape.input(Tensor.filled([4, 3], 0.0))
    loss = (layer.express(images) * layer.express(images)).sum()
    weight, bias = layer.parameters()
    weight_value = tape.value(weight)
    adjoints = tape.differentiate(loss, [weight, bias])
    assert adjoints[weight] == adjoints.of(weight_value) == adjoints.pairs[0][1]
    assert weight in adjoints and images not in adjoints
    with pytest.raises(GraphError, match="not among the 2 node"):
        adjoints[images]
    network = tape.into_network()
    feeds = {images.symbol: np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)}
    run = network.entry(adjoints.roots()).lower().forward(network.parameters(), feeds)
    gradients = run.recorded_gradients(adjoints)
    assert run.of(adjoints[weight]) == gradients[weight] == gradients[weight_value]


def test_parameters_replace_by_symbol_value_or_name():
    tape = Tape()
    recording = record_gru(tape, ROWS)
    network = tape.into_network()
    parameters = network.parameters()
    names = recording.parameter_names
    head = recording.parameters[-1]
    shape = tuple(network.shape(head))
    ones = np.ones(shape, np.float32)
    by_symbol = parameters.replace({head: ones})
    by_name = parameters.replace({names[-1]: Tensor.adopt(ones)})
    assert by_symbol.of(head) == by_name.of(head) == Tensor.adopt(ones)
    assert parameters.of(head) != by_symbol.of(head)  # a new Parameters; this one unchanged
    others = [symbol for symbol in parameters.symbols() if symbol != head]
    assert all(by_symbol.of(s) is parameters.of(s) for s in others)
    with pytest.raises(ShapeError, match=re.escape(f"is {network.shape(head)} float32")):
        parameters.replace({head: np.ones((1, 1), np.float32)})
    with pytest.raises(TypeError, match="is float64; the network computes in float32"):
        parameters.replace({head: np.ones(shape)})
    with pytest.raises(GraphError, match="no parameter is named 'nonesuch'"):
        parameters.replace({"nonesuch": ones})


def record_penalised(tape: Tape, dtype=np.float64):
    """A user's gradient penalty: the loss plus the squared norm of its weight gradient."""
    hidden = Linear(tape, init.normal(5, 0.6)(Shape([3, 4])).astype(dtype), None)
    head = Linear(tape, init.normal(6, 0.6)(Shape([4, 2])).astype(dtype), None)
    images = tape.input(Tensor.filled([3, 3], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0, 1, 1], 2, dtype=dtype))
    loss = cross_entropy(head.express(hidden.express(images).tanh()), targets)
    parameters = hidden.parameters() + head.parameters()
    first = tape.differentiate(loss, parameters)
    gradient = tape.value(first[parameters[0]])
    penalised = loss + (gradient * gradient).sum()
    feeds = {
        images.symbol: np.linspace(-1.5, 1.5, 9, dtype=dtype).reshape(3, 3),
        targets.symbol: np.eye(2, dtype=dtype)[[0, 1, 1]],
    }
    return penalised, parameters, images, feeds


def test_gradients_of_gradients_match_float64_finite_differences():
    tape = Tape(np.float64)
    penalised, parameters, _, feeds = record_penalised(tape)
    report = check_gradients(tape, penalised.symbol, parameters, feeds, directions=3)
    assert report.route_errors == {} and report.gradients_right


def test_input_gradients_match_float64_finite_differences():
    tape = Tape(np.float64)
    penalised, _, images, feeds = record_penalised(tape)
    adjoints = tape.differentiate(penalised, [images])
    network = tape.into_network()
    plan = network.entry(adjoints.roots()).lower()
    parameters = network.parameters()
    run = plan.forward(parameters, feeds)
    analytic = run.of(adjoints[images]).numpy()
    point = feeds[images.symbol]
    direction = np.random.default_rng(2).standard_normal(point.shape)
    step = 1e-5

    def at(t: float) -> float:
        moved = {**feeds, images.symbol: point + t * direction}
        return float(plan.forward(parameters, moved).of(penalised.symbol).scalar())

    numeric = (at(step) - at(-step)) / (2 * step)
    assert abs(numeric - float(np.sum(analytic * direction))) < 1e-7 * max(1.0, abs(numeric))


def test_library_errors_speak_the_librarys_words():
    tape = Tape()
    weights = tape.parameter(Tensor.filled([3], 1.0))
    adjoints = tape.differentiate((weights * weights).sum(), [weights])
    network = tape.into_network()
    with pytest.raises(GraphError) as caught:
        network.entry(adjoints.roots()).lower(budget="lots")
    assert "--budget" not in str(caught.value)
    assert str(caught.value).startswith("budget 'lots': give bytes with a unit")
    floor = network.entry(adjoints.roots()).lower(budget="floor+50%")
    assert floor.budget_bytes >= floor.floor_bytes


def test_lowers_docstring_agrees_with_the_remat_page():
    doc = inspect.getdoc(topos.Entry.lower)
    assert "floor+50%" in doc and "unconstrained peak" not in doc
    assert "fraction of the unconstrained plan's planned bytes" in " ".join(doc.split())
    remat = " ".join((ROOT / "docs/concepts/remat.md").read_text().split())
    assert "fraction of the unconstrained (recorded) plan's planned bytes" in remat
    assert "floor+50%" in remat


def test_every_library_error_is_a_top_level_name_listed_in_the_api_reference():
    errors = [
        name
        for name in topos.__all__
        if isinstance(getattr(topos, name), type) and issubclass(getattr(topos, name), Exception)
    ]
    defined = [
        name
        for name, thing in vars(topos.errors).items()
        if isinstance(thing, type) and issubclass(thing, Exception)
    ]
    assert set(defined) <= set(errors)
    assert topos.BudgetError is topos.errors.BudgetError
    reference = (ROOT / "docs/reference/api/topos.md").read_text()
    assert [name for name in errors if f"::: topos.{name}" not in reference] == []
