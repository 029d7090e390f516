"""Custom primitives are a public API (issue 41): registered from the user's own module,
checked like the built-ins, re-registered when the definition is the same (a re-run
notebook cell) or on purpose (`replace=True`), refused otherwise."""

from __future__ import annotations

import numpy as np
import pytest

from tests.library.conftest import load_user_module
from topos import Linear, RegistrationError, Shape, Tape, Tensor, cross_entropy, init, primitive
from topos.checking import check_gradients
from topos.extension import REGISTRY, same

ROWS, FEATURES, CLASSES = 4, 5, 3


def record_classifier(tape: Tape, dtype=np.float64):
    """A user's model: a linear layer, the user's softsign, a linear head, cross-entropy."""
    hidden = Linear(
        tape,
        init.normal(1, 0.8)(Shape([FEATURES, 6])).astype(dtype),
        Tensor.filled([6], 0.1, dtype=dtype),
    )
    head = Linear(tape, init.normal(2, 0.5)(Shape([6, CLASSES])).astype(dtype), None)
    images = tape.input(Tensor.filled([ROWS, FEATURES], 0.0, dtype=dtype))
    targets = tape.input(Tensor.selection([0, 1, 2, 1], CLASSES, dtype=dtype))
    loss = cross_entropy(head.express(hidden.express(images).softsign()), targets)
    return loss, hidden.parameters() + head.parameters(), images, targets


def feeds_for(images, targets, dtype=np.float64):
    generator = np.random.default_rng(7)
    return {
        images.symbol: generator.standard_normal((ROWS, FEATURES)).astype(dtype),
        targets.symbol: np.eye(CLASSES, dtype=dtype)[[0, 1, 2, 1]],
    }


def test_a_primitive_from_the_users_module_matches_float64_finite_differences(user_module):
    tape = Tape(np.float64)
    loss, parameters, images, targets = record_classifier(tape)
    report = check_gradients(
        tape, loss.symbol, parameters, feeds_for(images, targets), directions=3
    )
    assert report.route_errors == {}
    assert report.gradients_right, [check.errors for check in report.parameters]


def test_both_routes_train_a_user_primitive_bit_identically(user_module):
    bits = {}
    for route in ("engine", "recorded"):
        tape = Tape(np.float32)
        loss, parameters, images, targets = record_classifier(tape, np.float32)
        adjoints = tape.differentiate(loss, parameters) if route == "recorded" else None
        network = tape.into_network()
        feeds = feeds_for(images, targets, np.float32)
        if adjoints is None:
            plan = network.entry([loss.symbol]).backward().lower()
            run = plan.forward(network.parameters(), feeds)
            gradients = run.backward(loss.symbol).parameters(network.parameters())
        else:
            run = network.entry(adjoints.roots()).lower().forward(network.parameters(), feeds)
            gradients = run.recorded_gradients(adjoints)
        bits[route] = [gradients.of(p).numpy().tobytes() for p in parameters]
    assert bits["engine"] == bits["recorded"]


def test_re_running_the_users_module_registers_the_same_definition_again(user_module):
    first = REGISTRY["softsign"]
    again = load_user_module()  # a notebook cell run twice, a module reloaded
    assert REGISTRY["softsign"] is again.softsign and again.softsign is not first
    # Its examples and emission were declared afresh, once each.
    assert [example.name for example in REGISTRY["softsign"].examples] == ["softsign"]
    assert REGISTRY["softsign"].emission is not None


def test_another_definition_under_a_taken_name_is_refused_unless_replace(user_module):
    def derive(algebra, inputs, output, gradient, needs):
        return (gradient,)

    def other_softsign(operand, out=None):
        """Not softsign at all."""
        return np.copyto(out, operand) if out is not None else operand.copy()

    with pytest.raises(RegistrationError, match="'softsign' is already registered") as caught:
        primitive("softsign", 1, same, derive)(other_softsign)
    assert "softsign_module.py" in str(caught.value) and "replace=True" in str(caught.value)
    assert REGISTRY["softsign"] is user_module.softsign
    replaced = primitive("softsign", 1, same, derive, replace=True)(other_softsign)
    assert REGISTRY["softsign"] is replaced
    # A built-in is protected the same way.
    with pytest.raises(RegistrationError, match="'exp' is already registered"):
        primitive("exp", 1, same, derive)(other_softsign)


def test_a_users_primitive_emits_to_torch_agreeing_in_float64(user_module):
    pytest.importorskip("torch")
    from topos.peers.torch_emitter import TorchEmitter

    tape = Tape(np.float64)
    loss, parameters, images, targets = record_classifier(tape)
    adjoints = tape.differentiate(loss, parameters)
    network = tape.into_network()
    feeds = feeds_for(images, targets)
    run = network.entry(adjoints.roots()).lower().forward(network.parameters(), feeds)
    ours = run.recorded_gradients(adjoints)
    emitter = TorchEmitter(network, loss.symbol, [p.index for p in parameters])
    value, theirs = emitter.loss_and_gradients({s.index: a for s, a in feeds.items()})
    np.testing.assert_allclose(value, run.of(loss.symbol).numpy(), rtol=1e-12)
    for p in parameters:
        np.testing.assert_allclose(theirs[p.index], ours.of(p).numpy(), rtol=1e-10, atol=1e-12)
