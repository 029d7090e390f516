"""AdamW(decays=...) chooses the decayed parameters by name as well as by shape: a
predicate of (name, shape), a predicate of the shape, or a collection of names; in the
functional `step` and in the training loop's `step_in_place` alike."""

from __future__ import annotations

import numpy as np
import pytest

from topos import AdamW, Tape, Tensor
from topos.graph.parameter_gradients import ParameterGradients
from topos.training import ParameterMemory


def network():
    tape = Tape()
    tape.parameter(Tensor.filled([2, 2], 1.0), "layer.weight")
    tape.parameter(Tensor.filled([2], 1.0), "layer.bias")
    tape.parameter(Tensor.filled([2], 1.0), "norm.weight")
    return tape.into_network()


def zero_gradients(net):
    payloads = {
        index: Tensor.filled(net.shape(net.symbol(index)), 0.0) for index in net.names.values()
    }
    return ParameterGradients(net.origin, payloads)


def decayed_after_a_step(decays, in_place: bool) -> set[str]:
    """The parameters a step with zero gradients shrank (only the decay moves them)."""
    net = network()
    optimizer = AdamW(0.1, weight_decay=0.5, decays=decays)
    if in_place:
        memory = ParameterMemory(net.parameters())
        memory.update(optimizer, zero_gradients(net))
        stepped = memory.parameters
    else:
        stepped = optimizer.step(net.parameters(), zero_gradients(net))
    return {name for name, tensor in stepped.named().items() if np.all(tensor.numpy() < 1.0)}


@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize(
    ("decays", "expected"),
    [
        (None, {"layer.weight", "layer.bias", "norm.weight"}),
        (lambda shape: shape.rank >= 2, {"layer.weight"}),
        (lambda name, shape: not name.startswith("norm"), {"layer.weight", "layer.bias"}),
        (lambda name, shape: name.endswith("weight") and shape.rank == 1, {"norm.weight"}),
        ({"layer.bias", "norm.weight"}, {"layer.bias", "norm.weight"}),
    ],
    ids=["all", "by-shape", "by-name", "by-name-and-shape", "named"],
)
def test_decays_choose_by_name_and_shape(decays, expected, in_place):
    assert decayed_after_a_step(decays, in_place) == expected


def test_a_choice_by_name_refuses_an_unnamed_parameter():
    tape = Tape()
    tape.parameter(Tensor.filled([2], 1.0))
    net = tape.into_network()
    optimizer = AdamW(0.1, weight_decay=0.5, decays=lambda name, shape: True)
    with pytest.raises(ValueError, match="has none"):
        optimizer.step(net.parameters(), zero_gradients_of(net))


def zero_gradients_of(net):
    symbols = net.parameter_symbols()
    return ParameterGradients(
        net.origin, {symbol.index: Tensor.filled(net.shape(symbol), 0.0) for symbol in symbols}
    )
