"""The ops a PyTorch user reaches for (issue 27): against NumPy references in value,
against finite differences in float64 by both routes (the composites), and as methods
that `dir` and `help` see."""

from __future__ import annotations

import numpy as np
import pytest

from tests.autodiff.test_derivatives import check_against_finite_differences
from tests.support.cases import Case
from tests.support.routes import ROUTES
from topos import (
    Tape,
    Tensor,
    Value,
    attention,
    concat,
    dropout,
    dropout_mask,
    rms_norm,
    rotary,
    rotary_tables,
    split,
    stack,
    where,
)
from topos.ops.example import normal, on_parameters


def evaluate(build, arrays, dtype=np.float64):
    """The outputs `build(*values)` records over `arrays` as parameters."""
    tape = Tape(dtype=dtype)
    values = [tape.parameter(Tensor(a.shape, a, dtype=dtype)) for a in arrays]
    outputs = build(*values)
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    network = tape.into_network()
    run = network.entry([o.symbol for o in outputs]).lower().forward(network.parameters())
    return [run.of(o.symbol).numpy() for o in outputs]


RNG = np.random.default_rng(27)
X = RNG.standard_normal((2, 3, 5))


@pytest.mark.parametrize(
    "key",
    [
        0,
        -1,
        (slice(None), 1),
        (Ellipsis, slice(1, 4)),
        (Ellipsis, slice(None, None, 2)),
        (None, Ellipsis, slice(None, None, -1)),
        (1, None, slice(0, 2), -2),
        (slice(None, None, -2), Ellipsis, None),
    ],
    ids=repr,
)
def test_indexing_is_numpys_basic_indexing(key):
    (found,) = evaluate(lambda v: v[key], [X])
    np.testing.assert_array_equal(found, X[key])


def test_concat_stack_and_split_are_numpys():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4))
    (joined,) = evaluate(lambda x, y: concat([x, y, x], axis=-1), [a, b])
    np.testing.assert_array_equal(joined, np.concatenate([a, b, a], axis=-1))
    (stacked,) = evaluate(lambda x, y: stack([x, y], axis=1), [a, a + 1])
    np.testing.assert_array_equal(stacked, np.stack([a, a + 1], axis=1))
    pieces = evaluate(lambda x: split(x, 2, axis=-1), [X])
    for found, expected in zip(pieces, np.split(X, [2, 4], axis=-1), strict=True):
        np.testing.assert_array_equal(found, expected)


def test_where_selects_without_turning_an_unselected_infinity_into_nan():
    condition = RNG.standard_normal((3, 4)) > 0
    a = RNG.standard_normal((3, 4))
    (found,) = evaluate(lambda x: where(condition, x, float("-inf")), [a])
    np.testing.assert_array_equal(found, np.where(condition, a, -np.inf))


def test_sigmoid_and_silu_stay_finite_far_below_minus_88():
    values = np.array([-1e4, -500.0, -100.0, -89.0, -88.0, 0.0, 30.0, 1e4], np.float32)
    for route in sorted(ROUTES):
        outcome = ROUTES[route](
            on_parameters(lambda x: x.silu() + x.sigmoid()),
            [values.astype(np.float64)],
            1,
            np.float32,
        )
        (gradient,) = outcome.gradients
        assert np.all(np.isfinite(gradient)) and np.isfinite(outcome.loss), route
    (found,) = evaluate(lambda x: x.silu(), [values], np.float32)
    assert np.all(found[:3] == 0) and found[-1] == values[-1]


def test_rms_norm_is_the_reference():
    weight = RNG.uniform(0.5, 2.0, 5)
    (found,) = evaluate(lambda x, w: rms_norm(x, w, eps=1e-6), [X, weight])
    expected = X / np.sqrt((X**2).mean(-1, keepdims=True) + 1e-6) * weight
    np.testing.assert_allclose(found, expected, rtol=1e-12)


def test_rotary_is_llamas_rotate_half():
    x = RNG.standard_normal((2, 3, 6, 8))
    (found,) = evaluate(lambda v: rotary(v, theta=100.0), [x])
    frequencies = 100.0 ** (-np.arange(0, 8, 2) / 8)
    angles = np.outer(np.arange(6), frequencies)
    cos, sin = np.cos(np.tile(angles, 2)), np.sin(np.tile(angles, 2))
    rotated = np.concatenate([-x[..., 4:], x[..., :4]], axis=-1)
    np.testing.assert_allclose(found, x * cos + rotated * sin, rtol=1e-12, atol=1e-15)
    cos_table, _ = rotary_tables(6, 8, 100.0, np.float64)
    np.testing.assert_allclose(cos_table.numpy(), np.cos(angles))


def reference_attention(q, k, v, causal=False, mask=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = scores + mask
    if causal:
        scores = np.where(np.tri(scores.shape[-1], dtype=bool), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def test_attention_is_scaled_dot_product_attention_with_mask_and_grouped_heads():
    q = RNG.standard_normal((2, 4, 5, 8))
    k, v = RNG.standard_normal((2, 2, 5, 8)), RNG.standard_normal((2, 2, 5, 3))
    mask = np.where(RNG.standard_normal((5, 5)) > 1.0, -np.inf, 0.0)
    (found,) = evaluate(lambda a, b, c: attention(a, b, c, causal=True, mask=mask), [q, k, v])
    repeated_k, repeated_v = np.repeat(k, 2, axis=1), np.repeat(v, 2, axis=1)
    expected = reference_attention(q, repeated_k, repeated_v, causal=True, mask=mask)
    np.testing.assert_allclose(found, expected, rtol=1e-12)


def test_dropout_is_seeded_scaled_and_the_same_on_every_route():
    mask = dropout_mask((400,), 0.25, seed=9).numpy()
    assert set(np.unique(mask)) == {0.0, np.float32(4 / 3)}
    assert 0.15 < np.mean(mask == 0) < 0.35
    np.testing.assert_array_equal(mask, dropout_mask((400,), 0.25, seed=9).numpy())
    x = RNG.standard_normal((3, 4))
    outcomes = {
        route: ROUTES[route](on_parameters(lambda v: dropout(v, 0.5, seed=3)), [x], 2, np.float32)
        for route in sorted(ROUTES)
    }
    gradients = [outcome.gradients[0].tobytes() for outcome in outcomes.values()]
    assert len(set(gradients)) == 1


COMPOSITES = [
    Case("index_step", "gather", normal((3, 7)), on_parameters(lambda a: a[1:, ::-2])),
    Case("index_none", "narrow", normal((2, 3, 4)), on_parameters(lambda a: a[None, 1, ..., 2:])),
    Case(
        "stack_split",
        "concat",
        normal((2, 3), (2, 3)),
        on_parameters(lambda a, b: stack([split(a, [1, 2], -1)[1], split(b, [2, 1], -1)[0]], 0)),
    ),
    Case(
        "where_broadcast",
        "where",
        normal((3, 4), (4,)),
        on_parameters(lambda a, b: where(np.arange(12).reshape(3, 4) % 2 == 0, a, b)),
    ),
    Case(
        "attention_causal_mask",
        "matmul_nt",
        normal((2, 2, 4, 3), (2, 2, 4, 3), (2, 2, 4, 3)),
        on_parameters(
            lambda q, k, v: attention(
                q, k, v, causal=True, mask=np.triu(np.full((4, 4), 0.5)), scale=0.5
            )
        ),
    ),
    Case(
        "attention_grouped",
        "gather",
        normal((1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)),
        on_parameters(lambda q, k, v: attention(q, k, v)),
    ),
    Case(
        "rotary_helper",
        "rotary",
        normal((2, 4, 6)),
        on_parameters(lambda a: rotary(a, theta=10.0)),
    ),
]


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("case", COMPOSITES, ids=repr)
def test_composites_match_finite_differences(case, route):
    check_against_finite_differences(case, route)


ELEMENTWISE = ["exp", "ln", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu"]
ELEMENTWISE += ["relu", "heaviside", "abs", "maximum", "__getitem__"]


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_the_methods_are_on_the_class_with_docstrings(name):
    assert name in dir(Value)
    method = getattr(Value, name)
    assert callable(method) and method.__doc__ and len(method.__doc__) > 20
