"""A parameter used through views that NumPy may hand back as views of a gradient's
slot (extent-1 axes, whose strides NumPy ignores) gets the same, right gradient from
both routes, and nothing either route returns aliases the plan's arena.

The loss records `(q * q).sum()` first, so the engine's sweep finishes the gradient of
`p` and then runs `q`'s calls, which reuse the arena: a gradient of `p` that aliased
a slot would be overwritten by them (issue 10).
"""

from __future__ import annotations

import numpy as np
import pytest

from topos import Tape, Tensor, Value, conv2d
from topos.engine.ownership import aliasing, check_ownership
from topos.errors import GraphError


def _through(name: str, p: Value) -> Value:
    """`p` (shape [3]) used through a view chain; every element of the result is one
    element of `p`, so d sum(result * 7) / dp = 7."""
    if name == "transpose":
        return p.reshape(3, 1).T
    if name == "permute":
        return p.reshape(1, 3, 1).permute(2, 1, 0)
    if name == "pad":
        return p.reshape(1, 3).pad(((0, 0), (1, 1)))
    if name == "sum_along":
        return p.reshape(3, 1).sum_along(1)
    if name == "fold":
        return p.reshape(1, 1, 3).fold(0, 3)
    if name == "narrow":
        return p.reshape(1, 3, 1).narrow(1, 0, 3).permute(1, 2, 0)
    raise AssertionError(name)


SHAPES = ["transpose", "permute", "pad", "sum_along", "fold", "narrow"]


def gradients(route: str, build, dtype) -> tuple[dict[str, np.ndarray], object]:
    """The gradients of `p` and `q` by one route, checked for ownership, with the plan."""
    tape = Tape(dtype)
    p = tape.parameter(Tensor([3], [1.0, 2.0, 3.0], dtype=dtype))
    q = tape.parameter(Tensor.filled([16], 1.5, dtype=dtype))
    loss = (q * q).sum() + build(p)
    if route == "engine":
        network = tape.into_network()
        plan = network.entry([loss.symbol]).backward().lower()
        parameters = network.parameters()
        received = plan.forward(parameters).backward(loss.symbol).parameters(parameters)
    else:
        adjoints = tape.differentiate(loss.symbol, [p.symbol, q.symbol])
        network = tape.into_network()
        plan = network.entry(adjoints.roots()).lower()
        received = plan.forward(network.parameters()).recorded_gradients(adjoints)
    held = {"p": received.of(p.symbol), "q": received.of(q.symbol)}
    check_ownership(plan, held)
    return {name: np.array(tensor.numpy()) for name, tensor in held.items()}, plan


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("route", ["engine", "recorded"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_parameter_through_extent_one_views_gets_its_own_gradient(shape, route, dtype):
    result, _ = gradients(route, lambda p: (_through(shape, p) * 7.0).sum(), dtype)
    np.testing.assert_array_equal(result["p"], np.full(3, 7.0, dtype))
    np.testing.assert_array_equal(result["q"], np.full(16, 3.0, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("route", ["engine", "recorded"])
def test_a_one_by_one_convolution_of_weights_stored_as_a_vector(route, dtype):
    images = np.arange(2 * 3 * 2 * 2, dtype=dtype).reshape(2, 3, 2, 2) / 10

    def build(p: Value) -> Value:
        x = p.tape.leaf(Tensor(images.shape, images, dtype=dtype))
        return conv2d(x, p.reshape(1, 3, 1, 1)).sum()

    result, _ = gradients(route, build, dtype)
    # d sum(conv) / d w_c = the sum of channel c over every image and pixel.
    expected = images.sum(axis=(0, 2, 3))
    np.testing.assert_allclose(result["p"], expected, rtol=1e-6)


def test_ownership_names_a_payload_that_aliases_the_arena():
    tape = Tape(np.float64)
    p = tape.parameter(Tensor.filled([4], 2.0, dtype=np.float64))
    loss = ((p * p).exp() * 3.0).sum()
    network = tape.into_network()
    plan = network.entry([loss.symbol]).backward().lower()
    run = plan.forward(network.parameters())
    inside = plan.arena_blocks()[0][:8].view(np.float64)
    assert aliasing(plan, {"fine": run.of(loss.symbol), "inside": inside}) == ["inside"]
    with pytest.raises(GraphError, match="ownership: inside alias"):
        check_ownership(plan, {"inside": inside})
