"""gelu_product and its two gradients: `gelu(u) @ W` (a transformer MLP's second layer
over its activation) without ever holding `gelu(u)`.

The product is made in blocks of rows: each block's gelu goes to a small workspace and
straight into its rows of the product. The gradient of u is `gelu'(u) * (g Wᵀ)`, made in
the same blocks (so `g Wᵀ`, as large as u, is never held either); the gradient of W is
`gelu(u)ᵀ g`, each block's gelu made again and its product added in block order. So the
backward pass keeps u alone of the MLP's wide activations (not also its gelu, and never
the wide `g Wᵀ`), for one more gelu per block: what a forward plan saves most on
transformers. The blocks follow from the shapes alone, so the bits do; they agree with
the unfused `gelu(u) @ W` and its rules to float32 rounding, not to the bit (the weights'
gradient is summed block by block).

When both gradients are wanted (a trained MLP), one node,
`gelu_product_both_gradients`, makes them in one pass over the blocks and packs them in
one vector (u's, then W's), which two views unpack: a block's exponential, the costliest
pass, then serves both, and u and g are read once. Its bits are the two kernels' (the
same operations on the same values). It costs W's gradient once more in the arena, as a
part of the packed vector (the views' fresh copies are what the step returns). The two
kernels remain for a rule that wants only one.
"""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, recorded
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.gelu import (
    OVERFLOW_IS_A_LIMIT,
    _derive_gelu_gradient,
    emit_gelu,
    emit_gelu_slope,
    gelu_gradient_unguarded,
    gelu_unguarded,
)
from topos.ops.shape_rules import fail
from topos.tensor import Shape

#: Rows per block: a block of a 256-wide activation is 128 KiB of float32.
BLOCK_ROWS = 128


def _blocks(rows: int):
    """The row ranges of the blocks, in order."""
    return [(start, min(start + BLOCK_ROWS, rows)) for start in range(0, rows, BLOCK_ROWS)]


def _block_scratch(workspace, position: int, rows: int, width: int, dtype) -> np.ndarray:
    """Scratch `position` of a block (`[rows, width]`): in the workspace when given."""
    size = BLOCK_ROWS * width
    if workspace is not None and workspace.size >= (position + 1) * size:
        return workspace[position * size : position * size + rows * width].reshape(rows, width)
    return np.empty((rows, width), dtype=dtype)


def _block_scratches(workspace, rows: int, width: int, dtype) -> np.ndarray:
    """gelu_gradient's two scratches for a block (`2 * rows * width`, flat), after the
    block's first scratch: in the workspace when given."""
    size = BLOCK_ROWS * width
    if workspace is not None and workspace.size >= 3 * size:
        return workspace[size : size + 2 * rows * width]
    return np.empty(2 * rows * width, dtype=dtype)


def _check_matrix(operation: str, name: str, shape: Shape) -> None:
    if shape.rank != 2:
        raise fail(operation, f"{name} {shape} must be a matrix")


# gelu_product ---------------------------------------------------------------------------


def _infer_gelu_product(activations: Shape, weights: Shape) -> Shape:
    _check_matrix("gelu_product", "activations", activations)
    _check_matrix("gelu_product", "weights", weights)
    if activations[1] != weights[0]:
        raise fail(
            "gelu_product",
            f"activations {activations} and weights {weights} do not chain "
            f"({activations[1]} columns against {weights[0]} rows)",
        )
    return Shape((activations[0], weights[1]))


def _derive_gelu_product(algebra, inputs, output, gradient, needs):
    activations, weights = inputs
    if needs[0] and needs[1]:
        packed = algebra.gelu_product_both_gradients(activations, gradient, weights)
        return _unpacked(algebra, packed, algebra.shape(activations), algebra.shape(weights))
    weight_part = algebra.gelu_product_weights(activations, gradient) if needs[1] else None
    activation_part = (
        algebra.gelu_product_gradient(activations, gradient, weights) if needs[0] else None
    )
    return activation_part, weight_part


def _one_block(activations: Shape, weights: Shape) -> int:
    return BLOCK_ROWS * activations[1]


@primitive(
    "gelu_product",
    2,
    _infer_gelu_product,
    _derive_gelu_product,
    memory=MemoryRules(workspace=_one_block),
)
def gelu_product(activations, weights, out=None, workspace=None):
    """`gelu(activations) @ weights`, block of rows by block of rows."""
    activations = np.ascontiguousarray(activations)
    weights = np.ascontiguousarray(weights)
    rows, width = activations.shape
    if out is None:
        out = np.empty((rows, weights.shape[1]), dtype=activations.dtype)
    with np.errstate(**OVERFLOW_IS_A_LIMIT):
        for start, end in _blocks(rows):
            block = _block_scratch(workspace, 0, end - start, width, activations.dtype)
            gelu_unguarded(activations[start:end], block)
            np.matmul(block, weights, out=out[start:end])
    return out


# gelu_product_gradient ------------------------------------------------------------------


def _infer_gelu_product_gradient(activations: Shape, gradient: Shape, weights: Shape) -> Shape:
    product = _infer_gelu_product(activations, weights)
    if gradient != product:
        raise fail("gelu_product_gradient", f"gradient {gradient} for a product of shape {product}")
    return activations


def _derive_gelu_product_gradient(algebra, inputs, output, gradient, needs):
    # y = gelu_gradient(u, a) with a = g Wᵀ: gelu_gradient's own rule gives the parts for
    # u and a; a's part reaches g as (da) W and W as (da)ᵀ g.
    activations, incoming, weights = inputs
    spread = algebra.matmul_nt(incoming, weights)
    activation_part, spread_part = _derive_gelu_gradient(
        algebra, [activations, spread], output, gradient, (needs[0], needs[1] or needs[2])
    )
    incoming_part = algebra.matmul(spread_part, weights) if needs[1] else None
    weight_part = algebra.matmul_tn(spread_part, incoming) if needs[2] else None
    return activation_part, incoming_part, weight_part


def _three_blocks(activations: Shape, gradient: Shape, weights: Shape) -> int:
    # g Wᵀ of a block, and gelu_gradient's two scratches
    return 3 * BLOCK_ROWS * activations[1]


@primitive(
    "gelu_product_gradient",
    3,
    _infer_gelu_product_gradient,
    _derive_gelu_product_gradient,
    memory=MemoryRules(workspace=_three_blocks),
)
def gelu_product_gradient(activations, gradient, weights, out=None, workspace=None):
    """The gradient of the activations u of `gelu(u) @ W` given the product's gradient g:
    `gelu'(u) * (g Wᵀ)`, block of rows by block of rows."""
    activations = np.ascontiguousarray(activations)
    gradient = np.ascontiguousarray(gradient)
    weights = np.ascontiguousarray(weights)
    rows, width = activations.shape
    if out is None:
        out = np.empty((rows, width), dtype=activations.dtype)
    with np.errstate(**OVERFLOW_IS_A_LIMIT):
        for start, end in _blocks(rows):
            _activation_block(activations, gradient, weights, start, end, out, workspace)
    return out


def _activation_block(activations, gradient, weights, start: int, end: int, out, workspace):
    """u's gradient for the block of rows `[start, end)` into those rows of `out`; returns
    the block's `g Wᵀ` scratch (free once read) and gelu_gradient's two scratches (the
    first left holding `1 + exp(-2u)`), under the caller's errstate."""
    width = activations.shape[1]
    spread = _block_scratch(workspace, 0, end - start, width, activations.dtype)
    scratches = _block_scratches(workspace, end - start, width, activations.dtype)
    np.matmul(gradient[start:end], weights.T, out=spread)
    gelu_gradient_unguarded(activations[start:end], spread, out[start:end], scratches)
    return spread, scratches


# gelu_product_weights -------------------------------------------------------------------


def _infer_gelu_product_weights(activations: Shape, gradient: Shape) -> Shape:
    _check_matrix("gelu_product_weights", "activations", activations)
    _check_matrix("gelu_product_weights", "gradient", gradient)
    if activations[0] != gradient[0]:
        raise fail(
            "gelu_product_weights",
            f"activations {activations} and gradient {gradient} differ in rows",
        )
    return Shape((activations[1], gradient[1]))


def _derive_gelu_product_weights(algebra, inputs, output, gradient, needs):
    # y = gelu(u)ᵀ g; for the incoming H: in g, gelu(u) H; in u, gelu'(u) * (g Hᵀ).
    activations, incoming = inputs
    activation_part = incoming_part = None
    if needs[0]:
        activation_part = algebra.gelu_gradient(activations, algebra.matmul_nt(incoming, gradient))
    if needs[1]:
        incoming_part = algebra.matmul(algebra.gelu(activations), gradient)
    return activation_part, incoming_part


def _block_and_product(activations: Shape, gradient: Shape) -> int:
    return BLOCK_ROWS * activations[1] + activations[1] * gradient[1]


@primitive(
    "gelu_product_weights",
    2,
    _infer_gelu_product_weights,
    _derive_gelu_product_weights,
    memory=MemoryRules(workspace=_block_and_product),
)
def gelu_product_weights(activations, gradient, out=None, workspace=None):
    """`gelu(u)ᵀ g`: each block's gelu made again, the blocks' products added in order."""
    activations = np.ascontiguousarray(activations)
    gradient = np.ascontiguousarray(gradient)
    rows, width = activations.shape
    columns = gradient.shape[1]
    if out is None:
        out = np.empty((width, columns), dtype=activations.dtype)
    size = BLOCK_ROWS * width
    if workspace is not None and workspace.size >= size + width * columns:
        partial = workspace[size : size + width * columns].reshape(width, columns)
    else:
        partial = np.empty((width, columns), dtype=activations.dtype)
    out.fill(0)
    with np.errstate(**OVERFLOW_IS_A_LIMIT):
        for start, end in _blocks(rows):
            block = _block_scratch(workspace, 0, end - start, width, activations.dtype)
            gelu_unguarded(activations[start:end], block)
            np.matmul(block.T, gradient[start:end], out=partial)
            np.add(out, partial, out=out)
    return out


# gelu_product_both_gradients ------------------------------------------------------------


def _infer_gelu_product_both_gradients(
    activations: Shape, gradient: Shape, weights: Shape
) -> Shape:
    product = _infer_gelu_product(activations, weights)
    if gradient != product:
        raise fail(
            "gelu_product_both_gradients", f"gradient {gradient} for a product of shape {product}"
        )
    return Shape((activations.volume + weights.volume,))


def _unpacked(algebra, packed, activations: Shape, weights: Shape) -> tuple:
    """The activations' and the weights' gradients: views of the packed vector of
    `gelu_product_both_gradients`, the activations' first."""
    return (
        algebra.reshape(
            algebra.narrow(packed, axis=0, start=0, length=activations.volume),
            shape=tuple(activations),
        ),
        algebra.reshape(
            algebra.narrow(packed, axis=0, start=activations.volume, length=weights.volume),
            shape=tuple(weights),
        ),
    )


def _derive_gelu_product_both_gradients(algebra, inputs, output, gradient, needs):
    # The packed vector's two parts are gelu_product_gradient's and gelu_product_weights'
    # outputs: each part of the incoming gradient goes back through that one's rule.
    activations, incoming, weights = inputs
    activation_gradient, weight_gradient = _unpacked(
        algebra, gradient, algebra.shape(activations), algebra.shape(weights)
    )
    from_activations = _derive_gelu_product_gradient(
        algebra, inputs, None, activation_gradient, needs
    )
    from_weights = _derive_gelu_product_weights(
        algebra, (activations, incoming), None, weight_gradient, needs[:2]
    )
    summed = [
        algebra.add(first, second) if second is not None else first
        for first, second in zip(from_activations[:2], from_weights)
    ]
    return summed[0], summed[1], from_activations[2]


def _both_gradients_workspace(activations: Shape, gradient: Shape, weights: Shape) -> int:
    # gelu_product_gradient's three blocks; a block's weight product goes where its
    # gelu_gradient scratches were (after the first block), past them when it is larger.
    block = BLOCK_ROWS * activations[1]
    return block + max(2 * block, weights.volume)


@primitive(
    "gelu_product_both_gradients",
    3,
    _infer_gelu_product_both_gradients,
    _derive_gelu_product_both_gradients,
    memory=MemoryRules(workspace=_both_gradients_workspace),
)
def gelu_product_both_gradients(activations, gradient, weights, out=None, workspace=None):
    """Both gradients of `gelu(u) @ W` given the product's gradient g, packed in one
    vector: u's (`gelu_product_gradient`'s) then W's (`gelu_product_weights`'s), the
    same bits as those two kernels. One pass over the blocks: each block's exponential
    serves both, as `1 + exp(-2u)` left by the gradient's kernel is gelu's denominator."""
    activations = np.ascontiguousarray(activations)
    gradient = np.ascontiguousarray(gradient)
    weights = np.ascontiguousarray(weights)
    rows, width = activations.shape
    columns = weights.shape[1]
    if out is None:
        out = np.empty(rows * width + width * columns, dtype=activations.dtype)
    activation_part = out[: rows * width].reshape(rows, width)
    weight_part = out[rows * width :].reshape(width, columns)
    start = BLOCK_ROWS * width  # where the scratches start (see _both_gradients_workspace)
    if workspace is not None and workspace.size >= start + width * columns:
        partial = workspace[start : start + width * columns].reshape(width, columns)
    else:
        partial = np.empty((width, columns), dtype=activations.dtype)
    weight_part.fill(0)
    with np.errstate(**OVERFLOW_IS_A_LIMIT):
        for first, end in _blocks(rows):
            spread, scratches = _activation_block(
                activations, gradient, weights, first, end, activation_part, workspace
            )
            # gelu(u) = u / (1 + exp(-2u)), gelu_unguarded's last operation, into the
            # spread the gradient has finished with.
            block = activations[first:end]
            denominator = scratches[: block.size].reshape(block.shape)
            value = np.divide(block, denominator, out=spread)
            np.matmul(value.T, gradient[first:end], out=partial)
            np.add(weight_part, partial, out=weight_part)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "gelu_product",
    Example("gelu_product", normal((3, 4), (4, 2)), recorded("gelu_product")),
)

declare_examples(
    "gelu_product_gradient",
    Example(
        "gelu_product_gradient", normal((3, 4), (3, 2), (4, 2)), recorded("gelu_product_gradient")
    ),
)

declare_examples(
    "gelu_product_weights",
    Example("gelu_product_weights", normal((3, 4), (3, 2)), recorded("gelu_product_weights")),
)

declare_examples(
    "gelu_product_both_gradients",
    Example(
        "gelu_product_both_gradients",
        normal((3, 4), (3, 2), (4, 2)),
        recorded("gelu_product_both_gradients"),
    ),
)

# Emission: the unfused composite, `gelu(u) @ W` and its gradients ---------------------


def _emit_activation_gradient(xp, u, gradient, weights):
    return emit_gelu_slope(xp, u) * xp.matmul(gradient, xp.swap_last(weights))


def _emit_weight_gradient(xp, u, gradient):
    return xp.matmul(xp.swap_last(emit_gelu(xp, u)), gradient)


def _emit_both_gradients(xp, u, gradient, weights):
    parts = (
        _emit_activation_gradient(xp, u, gradient, weights),
        _emit_weight_gradient(xp, u, gradient),
    )
    return xp.concat([xp.reshape(part, (part.shape[0] * part.shape[1],)) for part in parts], 0)


declare_emission("gelu_product", lambda xp, u, weights: xp.matmul(emit_gelu(xp, u), weights))
declare_emission("gelu_product_gradient", _emit_activation_gradient)
declare_emission("gelu_product_weights", _emit_weight_gradient)
declare_emission("gelu_product_both_gradients", _emit_both_gradients)
