"""avg_pool2d, adaptive_avg_pool2d, GroupNorm and Conv1d (issue 46): against
torch.nn.functional in float64 and against finite differences by both routes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.test_derivatives import check_against_finite_differences
from tests.support.cases import Case
from tests.support.routes import ROUTES
from topos import (
    AdaptiveAvgPool2d,
    AvgPool2d,
    Conv1d,
    GroupNorm,
    ShapeError,
    Tape,
    Tensor,
    adaptive_avg_pool2d,
    avg_pool2d,
    conv1d,
    group_norm,
)
from topos.ops.example import normal, on_parameters

RNG = np.random.default_rng(46)
IMAGES = RNG.standard_normal((2, 6, 7, 5))


def _evaluate(build, *arrays):
    tape = Tape(dtype=np.float64)
    values = [tape.leaf(Tensor(a.shape, a, dtype=np.float64)) for a in arrays]
    output = build(*values)
    network = tape.into_network()
    run = network.entry([output.symbol]).lower().forward(network.parameters())
    return run.of(output.symbol).numpy()


@pytest.mark.parametrize(
    ("kernel", "stride", "padding"), [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))]
)
def test_avg_pool2d_is_torchs(kernel, stride, padding):
    torch = pytest.importorskip("torch")
    ours = _evaluate(lambda x: avg_pool2d(x, kernel, stride, padding), IMAGES)
    theirs = torch.nn.functional.avg_pool2d(torch.tensor(IMAGES), kernel, stride, padding)
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-12, atol=1e-15)
    layer = _evaluate(lambda x: AvgPool2d(kernel, stride, padding).express(x), IMAGES)
    np.testing.assert_array_equal(layer, ours)


@pytest.mark.parametrize("size", [1, (7, 5), (3, 2), (2, 5), 4])
def test_adaptive_avg_pool2d_is_torchs(size):
    torch = pytest.importorskip("torch")
    ours = _evaluate(lambda x: AdaptiveAvgPool2d(size).express(x), IMAGES)
    theirs = torch.nn.functional.adaptive_avg_pool2d(torch.tensor(IMAGES), size)
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("groups", [1, 3, 6])
def test_group_norm_is_torchs(groups):
    torch = pytest.importorskip("torch")
    weight, bias = RNG.standard_normal(6), RNG.standard_normal(6)
    ours = _evaluate(lambda x, w, b: group_norm(x, groups, w, b), IMAGES * 3 + 1, weight, bias)
    theirs = torch.nn.functional.group_norm(
        torch.tensor(IMAGES * 3 + 1), groups, torch.tensor(weight), torch.tensor(bias)
    )
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("stride", "padding"), [(1, 0), (2, 1), (1, 2)])
def test_conv1d_is_torchs(stride, padding):
    torch = pytest.importorskip("torch")
    sequences = RNG.standard_normal((2, 3, 9))
    weight, bias = RNG.standard_normal((4, 3, 3)), RNG.standard_normal(4)
    ours = _evaluate(lambda x, w, b: conv1d(x, w, b, stride, padding), sequences, weight, bias)
    theirs = torch.nn.functional.conv1d(
        torch.tensor(sequences), torch.tensor(weight), torch.tensor(bias), stride, padding
    )
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-10, atol=1e-12)


def _conv1d_layer(x):
    weights = Tensor.filled([2, 3, 2], 0.5, dtype=np.float64)
    return Conv1d(x.tape, weights, None, stride=2, padding=1).express(x * x)


CASES = [
    Case(
        "avg_pool2d_padded",
        "unfold",
        normal((2, 2, 5, 4)),
        on_parameters(lambda x: avg_pool2d(x, 3, 2, 1)),
    ),
    Case(
        "avg_pool2d_tiles",
        "reshape",
        normal((1, 2, 4, 6)),
        on_parameters(lambda x: avg_pool2d(x, 2)),
    ),
    Case(
        "adaptive_uneven",
        "concat",
        normal((2, 2, 5, 4)),
        on_parameters(lambda x: adaptive_avg_pool2d(x, (3, 3))),
    ),
    Case(
        "group_norm",
        "standardize",
        normal((2, 4, 3), (4,), (4,)),
        on_parameters(lambda x, w, b: group_norm(x, 2, w, b)),
    ),
    Case(
        "group_norm_layer",
        "row_scale",
        normal((2, 6, 2, 2)),
        on_parameters(lambda x: GroupNorm(x.tape, 3, 6).express(x)),
    ),
    Case(
        "conv1d",
        "convolution",
        normal((2, 3, 7), (4, 3, 3), (4,)),
        on_parameters(lambda x, w, b: conv1d(x, w, b, 2, 1)),
    ),
    Case("conv1d_layer", "convolution", normal((2, 3, 5)), on_parameters(_conv1d_layer)),
]


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_pooling_and_norms_match_finite_differences(case, route):
    check_against_finite_differences(case, route)


def test_bad_inputs_are_named():
    tape = Tape()
    images = tape.input(Tensor.filled([2, 6, 4, 4], 0.0))
    with pytest.raises(ShapeError, match="group_norm: 4 groups do not divide 6 channels"):
        group_norm(images, 4)
    with pytest.raises(ShapeError, match=r"adaptive_avg_pool2d: output size \(5, 5\)"):
        adaptive_avg_pool2d(images, 5)
    with pytest.raises(ShapeError, match=r"conv1d: input \[2, 6, 4, 4\]"):
        conv1d(images, images)
    with pytest.raises(ValueError, match="avg_pool2d: padding"):
        avg_pool2d(images, 2, 1, 2)
