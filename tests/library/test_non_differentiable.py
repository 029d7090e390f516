"""No silent zero gradient (issue 41): a primitive without a derivative rule must be
declared not differentiable, and a gradient through one is refused, naming the node and
the user's line that recorded it, on both routes and in the checker."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from topos import (
    Linear,
    NotDifferentiableError,
    RegistrationError,
    Shape,
    Tape,
    Tensor,
    cross_entropy,
    init,
    max_pool,
    primitive,
)
from topos.checking import check_gradients
from topos.extension import REGISTRY, same


def record_rounding_model(tape: Tape, dtype=np.float64):
    """A user's model whose hidden layer is rounded (a quantiser) before the head."""
    hidden = Linear(tape, init.normal(3, 0.7)(Shape([4, 5])).astype(dtype), None)
    head = Linear(tape, init.normal(4, 0.5)(Shape([5, 2])).astype(dtype), None)
    images = tape.input(Tensor.filled([3, 4], 0.5, dtype=dtype))
    targets = tape.input(Tensor.selection([0, 1, 1], 2, dtype=dtype))
    line = inspect.currentframe().f_lineno + 1
    quantised = hidden.express(images).rounded()
    loss = cross_entropy(head.express(quantised), targets)
    feeds = {
        images.symbol: np.linspace(-1, 1, 12).reshape(3, 4).astype(dtype),
        targets.symbol: np.eye(2, dtype=dtype)[[0, 1, 1]],
    }
    return loss, hidden.parameters() + head.parameters(), line, feeds


def test_a_rule_left_out_without_the_declaration_is_refused_at_registration():
    def kernel(operand, out=None):
        """A copy."""
        return np.copyto(out, operand) if out is not None else operand.copy()

    with pytest.raises(RegistrationError, match="'forgetful' has no derivative rule") as caught:
        primitive("forgetful", 1, same, None)(kernel)
    assert "differentiable=False" in str(caught.value)
    assert "forgetful" not in REGISTRY


def test_differentiating_through_a_non_differentiable_primitive_names_it(user_module):
    tape = Tape(np.float64)
    loss, parameters, line, _ = record_rounding_model(tape)
    recorded = len(tape)
    with pytest.raises(NotDifferentiableError) as caught:
        tape.differentiate(loss, parameters)
    message = str(caught.value)
    assert "rounded" in message and "declared not differentiable" in message
    assert f"test_non_differentiable.py:{line}" in message
    assert caught.value.operation == "rounded"
    assert len(tape) == recorded  # no half-recorded chain rule is left behind


def test_the_engine_route_refuses_it_too(user_module):
    tape = Tape(np.float64)
    loss, _, line, feeds = record_rounding_model(tape)
    network = tape.into_network()
    run = network.entry([loss.symbol]).backward().lower().forward(network.parameters(), feeds)
    with pytest.raises(NotDifferentiableError, match=f"rounded, recorded at .*:{line}"):
        run.backward(loss.symbol)


def test_the_checker_names_the_node_instead_of_no_rule_at_fault(user_module):
    tape = Tape(np.float64)
    loss, parameters, line, feeds = record_rounding_model(tape)
    report = check_gradients(tape, loss.symbol, parameters, feeds, directions=1)
    assert not report.gradients_right
    assert set(report.route_errors) == {"engine", "recorded", "remat"}
    for error in report.route_errors.values():
        assert "rounded" in error and f":{line}" in error
    assert report.culprit.operation == "rounded" and report.culprit.source.endswith(f":{line}")
    assert "no single rule was found at fault" not in report.verdict()
    assert "first wrong rule: rounded(" in report.verdict()


def test_a_non_differentiable_primitive_off_the_gradients_path_is_fine(user_module):
    # Rounding the data (an input no parameter reaches) needs no derivative.
    tape = Tape(np.float64)
    weights = tape.parameter(Tensor.filled([4], 0.5, dtype=np.float64))
    data = tape.input(Tensor.filled([4], 1.4, dtype=np.float64))
    loss = (weights * data.rounded()).sum()
    adjoints = tape.differentiate(loss, [weights])
    network = tape.into_network()
    run = network.entry(adjoints.roots()).lower().forward(network.parameters(), defaults=True)
    assert run.recorded_gradients(adjoints).of(weights).numpy().tolist() == [1.0] * 4


def test_every_built_in_primitive_has_a_rule():
    # None is declared not differentiable: the built-ins' gradients are all real ones.
    assert [name for name, p in REGISTRY.items() if p.derive is None] == []


def test_max_pool_still_differentiates_through_its_lane_numbers():
    # lane_argmax's rule is flat (lane numbers are piecewise constant): max_pool works.
    tape = Tape(np.float64)
    images = tape.parameter(Tensor(Shape([1, 1, 4, 4]), np.arange(16.0), dtype=np.float64))
    loss = max_pool(images, 2, 2).sum()
    adjoints = tape.differentiate(loss, [images])
    network = tape.into_network()
    run = network.entry(adjoints.roots()).lower().forward(network.parameters())
    gradient = run.recorded_gradients(adjoints).of(images).numpy()
    assert gradient.sum() == 4.0 and gradient[0, 0, 1, 1] == 1.0
