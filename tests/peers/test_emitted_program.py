"""The emitted program follows the operands its rules read: a convolution is the peer's
convolution of the images, so its patch matrix (recorded for topos's own derivative) is
not emitted unless another node reads it; either way the peers agree with topos."""

from __future__ import annotations

import numpy as np
import pytest

from tests.peers.peer_outcomes import PEERS, assert_agrees, peer_outcome
from tests.support.routes import record, recorded
from topos import Conv2d, Tape, conv2d_max_pool
from topos.graph.value import Value
from topos.ops.emission import declare_emission
from topos.peers.emitted_program import EmittedProgram

pytest.importorskip("torch")
pytest.importorskip("jax")


def _convolution(patches_read_elsewhere: bool):
    """A conv2d (and 2x2 max pool, phase-major rows) of parameter images, with the patch
    matrix also summed into the output when `patches_read_elsewhere`."""

    def build(tape: Tape, tensors):
        images = tape.parameter(tensors[0])
        weights = tape.parameter(tensors[1])
        layer = Conv2d(tape, tensors[2], None, padding=1)
        pooled = layer.express_max_pooled(images, 2)
        output = conv2d_max_pool(pooled, weights, None, padding=1, pool=2).relu()
        if patches_read_elsewhere:
            patches = next(value for value in _patch_values(tape) if value.shape[0] == 2 * 4 * 4)
            output = output.sum() + patches.sum()
        return output, [images.symbol, weights.symbol, *layer.parameters()]

    return build


def _patch_values(tape: Tape):
    for index, node in enumerate(tape.nodes):
        if node.operation == "im2col":
            yield Value(tape, index)


ARRAYS = [
    np.random.default_rng(3).standard_normal(shape)
    for shape in ((2, 3, 8, 8), (4, 5, 3, 3), (5, 3, 3, 3))
]


def _operations(build) -> list[str]:
    tape, loss, _ = record(build, ARRAYS, 7, np.float64)
    network = tape.into_network()
    program = EmittedProgram(network, [loss.symbol])
    return [network.nodes[index].operation for index in program.order]


def test_a_convolution_leaves_its_patches_unemitted():
    operations = _operations(_convolution(patches_read_elsewhere=False))
    assert operations.count("convolution") == 2
    assert "im2col" not in operations


def test_patches_another_node_reads_are_emitted():
    operations = _operations(_convolution(patches_read_elsewhere=True))
    assert operations.count("im2col") == 1


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("read", [False, True], ids=["patches-unread", "patches-read"])
def test_emitted_convolutions_agree_in_float64(peer: str, read: bool):
    build = _convolution(patches_read_elsewhere=read)
    topos = recorded(build, ARRAYS, 7, np.float64)
    assert_agrees(peer_outcome(peer, build, ARRAYS, 7, np.float64), topos)


def test_an_unread_operand_must_be_an_operand():
    with pytest.raises(ValueError, match="not among its operands"):
        declare_emission("add", lambda xp, a, b: a + b, unread=(2,))
