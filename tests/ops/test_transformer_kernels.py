"""The transformer's kernels against plain NumPy: the embedding's gradient adds rows in
index order (bit for bit a running sum), row sums and softmax agree with NumPy's to
rounding, the causal mask leaves the future out, and a planned run writes what an
unplanned one computes."""

from __future__ import annotations

import numpy as np
import pytest

from topos.ops.primitives.embedding import embedding_gradient
from topos.ops.primitives.gelu import gelu, gelu_gradient
from topos.ops.primitives.reduction import logsumexp
from topos.ops.primitives.softmax import softmax, softmax_gradient
from topos.ops.primitives.standardize import row_scale, standardize, standardize_gradient
from topos.ops.row_maxima import row_maxima
from topos.ops.row_sums import column_sums, row_sums
from topos.tensor import Shape

RNG = np.random.default_rng(14)


@pytest.mark.parametrize("vocabulary", [3, 50, 1000])
def test_embedding_gradient_is_a_running_sum_in_index_order(vocabulary):
    indices = RNG.integers(0, vocabulary, (16, 64))
    rows = RNG.standard_normal((16, 64, 8)).astype(np.float32)
    expected = np.zeros((vocabulary, 8), np.float32)
    for index, row in zip(indices.reshape(-1), rows.reshape(-1, 8)):
        expected[index] += row
    found = embedding_gradient.kernel(rows, indices, rows=vocabulary)
    assert found.tobytes() == expected.tobytes()
    workspace = np.full(rows.size, np.nan, np.float32)
    out = np.full_like(expected, np.nan)
    embedding_gradient.kernel(rows, indices, out=out, workspace=workspace, rows=vocabulary)
    assert out.tobytes() == expected.tobytes()


def test_row_and_column_sums_agree_with_numpy_to_rounding():
    values = RNG.standard_normal((5, 7, 64)).astype(np.float32)
    np.testing.assert_allclose(
        row_sums(values), values.sum(-1, keepdims=True), rtol=1e-5, atol=1e-5
    )
    matrix = values.reshape(35, 64)
    np.testing.assert_allclose(column_sums(matrix), matrix.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (2, 17, 17), (4, 64), (2, 3, 65), (0, 5)])
def test_row_maxima_are_numpys_bit_for_bit_and_keep_nan(shape):
    values = RNG.standard_normal(shape).astype(np.float32) * 10
    assert row_maxima(values).tobytes() == values.max(-1, keepdims=True).tobytes()
    # a strided operand, and a row holding a NaN (and one holding -inf) among finite ones
    assert row_maxima(values[..., ::-1]).tobytes() == values.max(-1, keepdims=True).tobytes()
    if values.size > 1 and shape[-1] > 1:
        values.reshape(-1, shape[-1])[0, -1] = np.nan
        values.reshape(-1, shape[-1])[-1, 0] = -np.inf
        found = row_maxima(values)
        assert np.isnan(found.reshape(-1)[0])
        assert found.tobytes() == values.max(-1, keepdims=True).tobytes()


def test_softmax_over_rows_of_no_entries_is_empty():
    # np.max refuses an empty row; the maxima take the maximum's identity instead
    assert row_maxima(np.zeros((3, 0), np.float32)).tolist() == [[-np.inf]] * 3
    with np.errstate(divide="ignore"):  # 1 over a row's sum of nothing
        for causal in (False, True):
            found = softmax.kernel(np.zeros((2, 0, 0), np.float32), causal=causal)
            assert found.shape == (2, 0, 0)
        assert softmax.kernel(np.zeros((3, 0), np.float32)).shape == (3, 0)


def test_causal_softmax_leaves_the_future_out():
    scores = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32) * 10
    found = softmax.kernel(scores, causal=True)
    masked = np.where(np.tri(6, dtype=bool), scores, -np.inf)
    expected = np.exp(masked - masked.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=1e-7)
    assert np.all(found[..., np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)


def test_softmax_is_stable_for_large_scores():
    scores = np.array([[1e4, 1e4 - 1, -1e4]], np.float32)
    np.testing.assert_allclose(softmax.kernel(scores, causal=False)[0, :2].sum(), 1.0, rtol=1e-6)


@pytest.mark.parametrize(
    ("kernel", "operands", "attributes"),
    [
        (softmax, 1, {"causal": True}),
        (softmax_gradient, 2, {}),
        (row_scale, 1, {"eps": 1e-5}),
        (standardize_gradient, 2, {}),
        (gelu, 1, {}),
        (gelu_gradient, 2, {}),
        (logsumexp, 1, {"axis": 2}),
    ],
    ids=lambda value: getattr(value, "name", None),
)
def test_writing_into_a_slot_and_a_workspace_gives_the_same_bits(kernel, operands, attributes):
    arrays = [RNG.standard_normal((4, 8, 8)).astype(np.float32) for _ in range(operands)]
    if kernel is standardize_gradient:
        arrays.append(RNG.uniform(0.5, 2, (4, 8, 1)).astype(np.float32))
    fresh = kernel.kernel(*arrays, **attributes)
    out = np.full_like(fresh, np.nan)
    extra = {}
    if kernel.memory.workspace is not None:
        size = kernel.memory.workspace(*(Shape(np.shape(a)) for a in arrays), **attributes)
        extra["workspace"] = np.full(size, np.nan, np.float32)
    written = kernel.kernel(*arrays, out=out, **attributes, **extra)
    assert written is out and out.tobytes() == fresh.tobytes()


def test_layer_norm_kernels_agree_with_numpy_to_rounding():
    rows = (RNG.standard_normal((6, 64)) * 3 + 10).astype(np.float32)
    scale = row_scale.kernel(rows, eps=1e-5)
    normalised = standardize.kernel(rows, scale)
    wide = rows.astype(np.float64)
    expected = (wide - wide.mean(-1, keepdims=True)) / np.sqrt(wide.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(normalised, expected, rtol=1e-4, atol=1e-5)


def test_the_gelu_product_agrees_with_gelu_then_the_product_over_several_blocks():
    from topos.ops.primitives.gelu_product import (
        BLOCK_ROWS,
        gelu_product,
        gelu_product_gradient,
        gelu_product_weights,
    )

    rows = 2 * BLOCK_ROWS + 5
    u = RNG.standard_normal((rows, 32)).astype(np.float32)
    weights = RNG.standard_normal((32, 8)).astype(np.float32)
    g = RNG.standard_normal((rows, 8)).astype(np.float32)
    activated = gelu.kernel(u)
    np.testing.assert_allclose(
        gelu_product.kernel(u, weights), activated @ weights, rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        gelu_product_gradient.kernel(u, g, weights),
        gelu_gradient.kernel(u, g @ weights.T),
        rtol=1e-5,
        atol=1e-5,
    )
    np.testing.assert_allclose(
        gelu_product_weights.kernel(u, g), activated.T @ g, rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize(
    "rows, width, columns",
    [(300, 32, 8), (5, 3, 2), (129, 4, 600)],
    ids=["several blocks", "one short block", "weights past the scratches"],
)
def test_gelu_product_both_gradients_packs_them_with_their_own_kernels_bits(
    rows, width, columns, monkeypatch
):
    # One pass serving both gradients is worth having only if it changes no bit of
    # either: the same operations on the same values, in a planned workspace that starts
    # out as NaN (so a gradient read from a scratch the other overwrote shows).
    from topos.ops.primitives.gelu_product import (
        _both_gradients_workspace,
        gelu_product_both_gradients,
        gelu_product_gradient,
        gelu_product_weights,
    )

    u = (4 * RNG.standard_normal((rows, width))).astype(np.float32)
    u.flat[:3] = [100.0, -100.0, 0.0]  # exp(-2u) overflowing, vanishing, and 1
    g = RNG.standard_normal((rows, columns)).astype(np.float32)
    weights = RNG.standard_normal((width, columns)).astype(np.float32)
    shapes = (Shape(u.shape), Shape(g.shape), Shape(weights.shape))
    workspace = np.full(_both_gradients_workspace(*shapes), np.nan, np.float32)
    out = np.empty(u.size + weights.size, np.float32)
    # The planned workspace holds every block and the partial product: nothing is made aside.
    with monkeypatch.context() as patch:
        patch.setattr(np, "empty", lambda *_, **__: pytest.fail("allocated outside the plan"))
        packed = gelu_product_both_gradients.kernel(u, g, weights, out=out, workspace=workspace)
    expected = np.concatenate(
        [
            gelu_product_gradient.kernel(u, g, weights).ravel(),
            gelu_product_weights.kernel(u, g).ravel(),
        ]
    )
    assert packed.view(np.uint32).tolist() == expected.view(np.uint32).tolist()


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("block", [1, 64, 1 << 15])
def test_rotary_is_the_half_split_formula_bit_for_bit_in_any_block(monkeypatch, inverse, block):
    import topos.ops.primitives.rotary as rotary_module

    monkeypatch.setattr(rotary_module, "_BLOCK_ELEMENTS", block)
    heads = RNG.standard_normal((3, 6, 2, 8)).astype(np.float32).transpose(0, 2, 1, 3)
    cos, sin = (RNG.standard_normal((6, 4)).astype(np.float32) for _ in range(2))
    first, second = heads[..., :4], heads[..., 4:]
    turn = -1 if inverse else 1
    expected = np.concatenate(
        [first * cos - second * (sin * turn), second * cos + first * (sin * turn)], axis=-1
    )
    size = rotary_module._workspace(Shape(heads.shape), Shape(cos.shape), Shape(sin.shape), inverse)
    workspace = np.full(size, np.nan, np.float32)
    out = np.full(heads.shape, np.nan, np.float32)
    rotary_module.rotary.kernel(heads, cos, sin, out=out, inverse=inverse, workspace=workspace)
    assert out.tobytes() == expected.tobytes()
    assert rotary_module.rotary.kernel(heads, cos, sin, inverse=inverse).tobytes() == out.tobytes()


def test_the_logistic_function_agrees_with_float64_to_rounding_and_saturates():
    from topos.ops.primitives.sigmoid import logistic

    values = np.concatenate([RNG.standard_normal(1000) * 8, [-1e4, -89.0, 0.0, 89.0, 1e4]])
    values = values.astype(np.float32)
    found = logistic(values)
    with np.errstate(over="ignore"):
        expected = 1.0 / (1.0 + np.exp(-values.astype(np.float64)))
    np.testing.assert_allclose(found, expected, rtol=4e-7, atol=1e-30)
    assert found[-5] == 0.0 and found[-1] == 1.0


def test_gelu_and_its_gradient_agree_with_the_tanh_form_in_float64_and_stay_finite():
    values = np.concatenate([RNG.standard_normal(4000) * 4, [-1e4, -60.0, 0.0, 60.0, 1e4]])
    values = values.astype(np.float32)
    gradient = RNG.standard_normal(values.size).astype(np.float32)
    wide = values.astype(np.float64)
    root = np.sqrt(2 / np.pi)
    tangent = np.tanh(root * (wide + 0.044715 * wide**3))
    slope = 0.5 * (1 + tangent) + 0.5 * wide * root * (1 + 3 * 0.044715 * wide**2) * (
        1 - tangent**2
    )
    found = gelu.kernel(values)
    sent = gelu_gradient.kernel(values, gradient)
    assert np.isfinite(found).all() and np.isfinite(sent).all()
    np.testing.assert_allclose(found, 0.5 * wide * (1 + tangent), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(sent, gradient * slope, rtol=1e-5, atol=1e-6)
    assert found[-5] == 0 and found[-1] == values[-1] and sent[-5] == 0
