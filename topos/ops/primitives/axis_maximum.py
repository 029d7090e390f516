"""argmax, max_along, and max_along's derivative pair place_along and pick_along: the
largest entry along one axis and where it is (PyTorch's `x.max(dim)`, `amax`, `argmax`).

- `argmax(x, axis)`: the position of the first largest entry along `axis`, as a float
  (the graph's values are floats), the axis removed. Not differentiable: a position is
  piecewise constant, and the rule sends nothing back through it.
- `max_along(x, winners, axis)`: the largest entry along `axis` (`np.max`, exact in any
  order). `winners` must be `argmax(x, axis)`: the value does not read it, the
  derivative sends the gradient to that one position, the first of a tie (as PyTorch's
  `max(dim)` sends it to the index it returns). So a forward-only plan can free `x` once
  it is reduced and keep the small winners for the backward pass.
- `place_along(winners, g, axis, length)`: `g` placed at each winner along a new axis
  of `length`, zeros elsewhere: max_along's derivative.
- `pick_along(values, winners, axis)`: the entry of `values` at each winner:
  place_along's adjoint in `g`, and place_along is its adjoint.

Nothing here adds: entries are compared, copied or placed, so every route has the same
bits by construction.
"""

from __future__ import annotations

import numpy as np

from topos.ops.corner import Corner, own_output
from topos.ops.emission import declare_emission
from topos.ops.example import Example, distinct, normal, on_parameters, record
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import check_axis, fail
from topos.tensor import Shape, Tensor


def _without(operation: str, operand: Shape, axis: int) -> Shape:
    check_axis(operation, operand, axis)
    if operand[axis] == 0:
        raise fail(operation, f"axis {axis} of shape {operand} holds no entries")
    return Shape(extent for position, extent in enumerate(operand) if position != axis)


def _positions(winners: np.ndarray, axis: int) -> np.ndarray:
    """The winners as integer positions, with the reduced axis back as an axis of 1."""
    return np.expand_dims(winners.astype(np.intp), axis)


# argmax --------------------------------------------------------------------------------


def _infer_argmax(operand: Shape, axis: int = 0) -> Shape:
    return _without("argmax", operand, axis)


def _derive_argmax(algebra, inputs, output, gradient, needs, axis=0):
    # Positions are piecewise constant in the operand: flat wherever they have a
    # derivative (as lane_argmax's lane numbers), so they send nothing back, by this
    # rule; as in PyTorch, where an index carries no gradient.
    return (None,)


@primitive(
    "argmax",
    1,
    _infer_argmax,
    _derive_argmax,
    corner=Corner(own_output, "a maximum's tie along an axis"),
)
def argmax(operand, out=None, axis=0):
    """The position of the first largest entry along `axis`, as a float."""
    positions = np.argmax(np.ascontiguousarray(operand), axis=axis)
    if out is None:
        return np.asarray(positions.astype(operand.dtype))
    np.copyto(out, positions, casting="unsafe")
    return out


# max_along -----------------------------------------------------------------------------


def _infer_along(operation: str):
    def infer(values: Shape, winners: Shape, axis: int = 0) -> Shape:
        reduced = _without(operation, values, axis)
        if winners != reduced:
            raise fail(operation, f"winners {winners} must have the reduced shape {reduced}")
        return reduced

    return infer


def _derive_along(algebra, inputs, output, gradient, needs, axis=0):
    length = algebra.shape(inputs[0])[axis]
    return (algebra.place_along(inputs[1], gradient, axis=axis, length=length), None)


def _along_winners(inputs, output, axis=0):
    return argmax.kernel(inputs[0], axis=axis)


@primitive(
    "max_along",
    2,
    _infer_along("max_along"),
    _derive_along,
    corner=Corner(_along_winners, "a maximum's tie along an axis"),
)
def max_along(values, winners, out=None, axis=0):
    """The largest entry along `axis` (`winners`, which must be `argmax(values)`, is for
    the derivative)."""
    if out is None:
        return np.asarray(np.max(values, axis=axis))
    return np.max(values, axis=axis, out=out)


# place_along ---------------------------------------------------------------------------


def _infer_place_along(winners: Shape, gradient: Shape, axis: int = 0, length: int = 1) -> Shape:
    if gradient != winners:
        raise fail("place_along", f"gradient {gradient} must have the winners' shape {winners}")
    if not 0 <= axis <= winners.rank or length < 1:
        raise fail("place_along", f"cannot place along axis {axis} of length {length}")
    extents = list(winners)
    extents.insert(axis, length)
    return Shape(extents)


def _derive_place_along(algebra, inputs, output, gradient, needs, axis=0, length=1):
    return (None, algebra.pick_along(gradient, inputs[0], axis=axis))


@primitive("place_along", 2, _infer_place_along, _derive_place_along)
def place_along(winners, gradient, out=None, axis=0, length=1):
    """`gradient` at each winner's position along a new `axis` of `length`; zeros elsewhere."""
    winners, gradient = np.asarray(winners), np.asarray(gradient)
    shape = list(gradient.shape)
    shape.insert(axis, length)
    if out is None:
        out = np.zeros(shape, dtype=gradient.dtype)
    else:
        out.fill(0)
    np.put_along_axis(out, _positions(winners, axis), np.expand_dims(gradient, axis), axis)
    return out


# pick_along ----------------------------------------------------------------------------


@primitive("pick_along", 2, _infer_along("pick_along"), _derive_along)
def pick_along(values, winners, out=None, axis=0):
    """The entry of `values` at each winner's position along `axis`, the axis removed."""
    values, winners = np.asarray(values), np.asarray(winners)
    picked = np.take_along_axis(values, _positions(winners, axis), axis)
    picked = np.squeeze(picked, axis)
    if out is None:
        return np.ascontiguousarray(picked)
    np.copyto(out, picked)
    return out


# Examples: what each primitive's derivative test differentiates ---------------------


def _winners(x, axis):
    return record("argmax", x, axis=axis)


def _max_example(name: str, shape, axis: int) -> Example:
    """max_along over distinct values (no tie for finite differences to straddle), its
    winners found from the same operand."""
    return Example(
        name,
        distinct(shape),
        on_parameters(lambda x: record("max_along", x, _winners(x, axis), axis=axis)),
    )


def _argmax_example(name: str, shape, axis: int) -> Example:
    """argmax has no derivative rule: a gradient flows past it (`pick_along(tanh(x),
    argmax(x))`: the sweep visits the argmax and sends it nothing), which finite
    differences see as the constant it is away from ties."""
    return Example(
        name,
        distinct(shape),
        on_parameters(lambda x: record("pick_along", x.tanh(), _winners(x, axis), axis=axis)),
    )


def _with_fixed_winners(name: str, subject: str, shape, axis: int) -> Example:
    """place_along and pick_along with winners from a fixed leaf of distinct values; only
    the other operand varies."""
    fixed = distinct(shape)(np.random.default_rng(7))[0]
    reduced = tuple(extent for position, extent in enumerate(shape) if position != axis)
    varying = reduced if subject == "place_along" else tuple(shape)

    def build(tape, tensors):
        winners = _winners(tape.leaf(Tensor(shape, fixed, dtype=tape.dtype)), axis)
        values = tape.parameter(tensors[0])
        if subject == "place_along":
            output = tape.record(subject, (winners, values), axis=axis, length=shape[axis])
        else:
            output = tape.record(subject, (values, winners), axis=axis)
        return output, [values.symbol]

    return Example(name, normal(varying), build)


declare_examples(
    "argmax",
    _argmax_example("argmax_last", (3, 5), 1),
    _argmax_example("argmax_leading", (4, 2, 3), 0),
)

declare_examples(
    "max_along",
    _max_example("max_along_last", (3, 5), 1),
    _max_example("max_along_middle", (2, 4, 3), 1),
    _max_example("max_along_rank1", (6,), 0),
)

declare_examples(
    "place_along",
    _with_fixed_winners("place_along_last", "place_along", (3, 5), 1),
    _with_fixed_winners("place_along_leading", "place_along", (4, 2, 3), 0),
)

declare_examples(
    "pick_along",
    _with_fixed_winners("pick_along_last", "pick_along", (3, 5), 1),
    _with_fixed_winners("pick_along_middle", "pick_along", (2, 4, 3), 1),
)

# Emission: the winner picked by its position, so the peer's gradient reaches it alone --


def _inserted(xp, x, axis):
    extents = tuple(x.shape)
    return xp.reshape(x, (*extents[:axis], 1, *extents[axis:]))


def _emit_pick(xp, values, winners, axis=0):
    positions = _inserted(xp, xp.indices(xp.stop_gradient(winners)), axis)
    picked = xp.take_along(values, positions, axis)
    return xp.reshape(picked, tuple(winners.shape))


def _emit_place_along(xp, winners, gradient, axis=0, length=1):
    numbers = np.arange(length).reshape((length,) + (1,) * (len(winners.shape) - axis))
    hit = xp.as_float(xp.constant(numbers.astype(xp.dtype)) == _inserted(xp, winners, axis))
    return hit * _inserted(xp, gradient, axis)


declare_emission("argmax", lambda xp, x, axis=0: xp.as_float(xp.argmax(x, axis)))
declare_emission("max_along", _emit_pick)
declare_emission("place_along", _emit_place_along)
declare_emission("pick_along", _emit_pick)
