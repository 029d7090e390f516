"""Optimizers' updates in place: the same bits as their functional steps, chunk by chunk."""

from __future__ import annotations

import numpy as np
import pytest

from topos import SGD, Adam, Tape, Tensor
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.nn.chunked_update import CHUNK_ELEMENTS, Workspace, chunks

RNG = np.random.default_rng(16)


def network_of(shapes):
    """A network with one parameter per shape (the loss never matters here)."""
    tape = Tape()
    values = [
        tape.parameter(Tensor(shape, RNG.standard_normal(shape), np.float32)) for shape in shapes
    ]
    total = values[0].sum()
    for value in values[1:]:
        total = total + value.sum()
    return tape.into_network()


#: A parameter spanning several chunks and ending in a partial one, a small one, a scalar.
SHAPES = [(3, CHUNK_ELEMENTS // 2 + 7), (5,), ()]


def gradients_for(network, seed):
    rng = np.random.default_rng(seed)
    return ParameterGradients(
        network.origin,
        {
            index: Tensor.adopt(
                rng.standard_normal(network.nodes[index].shape.extents).astype(np.float32)
            )
            for index in network.parameter_indices
        },
    )


@pytest.mark.parametrize("make", [lambda: SGD(0.05), lambda: Adam(0.01)], ids=["sgd", "adam"])
def test_an_update_in_place_has_the_bits_of_the_functional_step(make):
    network = network_of(SHAPES)
    functional, in_place = make(), make()
    parameters = network.parameters()
    arrays = {index: np.array(array) for index, array in parameters.arrays().items()}
    for step in range(4):
        gradients = gradients_for(network, step)
        before = {index: array.copy() for index, array in parameters.arrays().items()}
        parameters = functional.step(parameters, gradients)
        in_place.step_in_place(arrays, gradients)
        for index, array in parameters.arrays().items():
            assert array.tobytes() == arrays[index].tobytes(), (step, index)
            assert array.tobytes() != before[index].tobytes()
    # The functional step left the network's own initial payloads alone.
    for index, payload in network.parameters().arrays().items():
        assert payload.tobytes() == network.payloads[index].numpy().tobytes()


def test_a_parameter_without_a_gradient_is_not_written():
    network = network_of(SHAPES)
    arrays = {index: np.array(array) for index, array in network.parameters().arrays().items()}
    first, *others = network.parameter_indices
    before = {index: arrays[index].copy() for index in others}
    only_first = ParameterGradients(
        network.origin, {first: Tensor.filled(network.nodes[first].shape, 1.0)}
    )
    for optimizer in (SGD(0.1), Adam(0.1)):
        optimizer.step_in_place(arrays, only_first)
    for index in others:
        assert arrays[index].tobytes() == before[index].tobytes()


def test_chunks_cover_every_element_once():
    for elements in (0, 1, CHUNK_ELEMENTS, CHUNK_ELEMENTS + 1, 3 * CHUNK_ELEMENTS - 5):
        covered = [index for part in chunks(elements) for index in range(part.start, part.stop)]
        assert covered == list(range(elements))
        assert all(part.stop - part.start <= CHUNK_ELEMENTS for part in chunks(elements))


def test_the_workspace_counts_the_pages_an_update_touches():
    assert Workspace(1).bytes(np.float32, 10) == 4096
    assert Workspace(2).bytes(np.float32, 10**9) == 2 * CHUNK_ELEMENTS * 4
    assert SGD(0.1).workspace_bytes(np.float64, 2000) == 16384
    assert Adam().state_sizes([400, 40]) == [880] and SGD(0.1).state_sizes([400]) == []


def test_a_functional_adam_step_leaves_the_callers_parameters_alone():
    network = network_of(SHAPES)
    parameters = Parameters(
        network, {index: network.payloads[index] for index in network.parameter_indices}
    )
    before = {index: array.tobytes() for index, array in parameters.arrays().items()}
    stepped = Adam(0.1).step(parameters, gradients_for(network, 7))
    assert stepped is not parameters
    assert {index: array.tobytes() for index, array in parameters.arrays().items()} == before


def test_adamw_steps_parameters_lying_back_to_back_as_runs_with_the_functional_bits():
    from topos import AdamW
    from topos.training.parameter_memory import ParameterMemory

    network = network_of([*SHAPES, (4, 6), (7,)])
    indices = list(network.parameter_indices)
    memory = ParameterMemory(network.parameters())  # the parameters in one block

    def carved(seed, skip=None):
        # gradients carved back to back from one block, as a sharded step's mean gives them
        rng = np.random.default_rng(seed)
        sizes = [network.nodes[index].shape.volume for index in indices]
        block = rng.standard_normal(sum(sizes)).astype(np.float32)
        starts = np.cumsum([0, *sizes])
        return ParameterGradients(
            network.origin,
            {
                index: Tensor.adopt(
                    block[starts[k] : starts[k + 1]].reshape(network.nodes[index].shape.extents)
                )
                for k, index in enumerate(indices)
                if index != skip
            },
        )

    def decays(shape):
        return shape.rank >= 2

    functional = AdamW(0.01, weight_decay=0.1, decays=decays)
    in_place = AdamW(0.01, weight_decay=0.1, decays=decays)
    calls = []
    step_moments = in_place._step_moments
    in_place._step_moments = lambda *parts: calls.append(parts[0].size) or step_moments(*parts)
    parameters = network.parameters()
    # the third step leaves one parameter out: its count falls behind, splitting the run
    for step, skip in enumerate([None, None, indices[1], None]):
        gradients = carved(step, skip)
        parameters = functional.step(parameters, gradients)
        memory.update(in_place, gradients)
        for index, array in parameters.arrays().items():
            assert array.tobytes() == memory.arrays[index].tobytes(), (step, index)
    assert calls[0] == sum(network.nodes[index].shape.volume for index in indices)
    assert len(calls) > 4  # the runs split where the counts differ


def test_adamw_in_place_follows_a_weight_decay_changed_between_steps():
    # What step_in_place remembers of its arrays (runs, decayed parameters) must not
    # outlive the weight decay it was found under: off, on, off and on again.
    from topos import AdamW
    from topos.training.parameter_memory import ParameterMemory

    network = network_of([*SHAPES, (4, 6)])
    memory = ParameterMemory(network.parameters())

    def decays(shape):
        return shape.rank >= 2

    functional = AdamW(0.01, weight_decay=0.1, decays=decays)
    in_place = AdamW(0.01, weight_decay=0.1, decays=decays)
    parameters = network.parameters()
    for step, weight_decay in enumerate([0.0, 0.1, 0.0, 0.3]):
        functional.weight_decay = in_place.weight_decay = weight_decay
        gradients = gradients_for(network, step)
        parameters = functional.step(parameters, gradients)
        memory.update(in_place, gradients)
        for index, array in parameters.arrays().items():
            assert array.tobytes() == memory.arrays[index].tobytes(), (step, index)
