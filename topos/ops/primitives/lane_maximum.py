"""lane_argmax, lane_max, and lane_max's derivative pair lane_place and lane_select.

The *lanes* of `x` along `axes` are the slices of `x` at each index of those axes,
taken in row-major order of the indices; a lane has `x`'s shape without the lane
axes. It is max pooling for data whose windows are axes of their own: the product
of a convolution, `[N*OH*OW, F]`, reshaped to `[N, OH/2, 2, OW/2, 2, F]` has its
2x2 windows on axes (2, 4) with no copy; with phase-major patch rows
(`im2col(..., phases=2)`) it reshapes to `[4, N*OH/2*OW/2, F]`, lanes on axis 0,
each lane one contiguous block.

- `lane_argmax(x, axes)`: for each entry, the number of the lane that wins it, as
  a float: the first lane holding the maximum, as `max_pool` picks (a lane wins
  over the earlier ones only when it is strictly greater). Not differentiable.
- `lane_max(x, winners, axes)`: the largest lane of `x`, a left-biased `maximum`
  folded over the lanes in order, as `max_pool` computes a window's. `winners`
  must be `lane_argmax(x)`: the value does not read it, the derivative routes by
  it. That is what lets a forward-only plan free `x` once it is pooled and keep
  only the winners (a quarter of its entries, for 2x2 pooling) for the backward
  pass: the forward records the masks, as hand-written training loops do.
- `lane_place(winners, g, axes, extents)`: `g` placed on each entry's winning lane,
  zeros on the other lanes, in the shape with the lane axes (of `extents`) put
  back: the derivative of lane_max (and of lane_select).
- `lane_select(values, winners, axes)`: each entry of the winning lane of
  `values`: lane_place's adjoint in `g`, and lane_place is its adjoint.

The winners are compared for equality and the gradients multiplied by 0 and 1 or
copied, so no arithmetic is regrouped: the same bits on every route.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from topos.ops.corner import Corner, own_output
from topos.ops.emission import declare_emission
from topos.ops.example import Example, distinct, normal, on_parameters, record
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.primitives.pooling import Scratch
from topos.ops.shape_rules import fail
from topos.tensor import Shape, Tensor


def _lane_shape(operation: str, operand: Shape, axes: tuple[int, ...]) -> Shape:
    """`operand`'s shape without its lane axes (which must be valid)."""
    if not axes or list(axes) != sorted(set(axes)) or not 0 <= axes[0] <= axes[-1] < operand.rank:
        raise fail(operation, f"lane axes {list(axes)} must be increasing axes of {operand}")
    if any(operand[axis] < 1 for axis in axes):
        raise fail(operation, f"input {operand} must have at least one lane on axes {list(axes)}")
    return Shape(tuple(extent for axis, extent in enumerate(operand) if axis not in axes))


def _with_lanes(operation: str, lane: Shape, axes: tuple[int, ...], extents: tuple[int, ...]):
    """The shape whose lanes along `axes` (of `extents`) have shape `lane`."""
    rank = lane.rank + len(axes)
    if len(extents) != len(axes) or any(extent < 1 for extent in extents):
        raise fail(operation, f"lane extents {list(extents)} must be positive, one per axis")
    if list(axes) != sorted(set(axes)) or not all(0 <= axis < rank for axis in axes):
        raise fail(operation, f"lane axes {list(axes)} must be increasing axes of rank {rank}")
    rest = iter(lane)
    by_axis = dict(zip(axes, extents))
    return Shape(tuple(by_axis[axis] if axis in by_axis else next(rest) for axis in range(rank)))


def _lanes(array: np.ndarray, axes: tuple[int, ...]) -> list[np.ndarray]:
    """The views of `array` at each lane index, in row-major order of the lane axes."""
    lanes = []
    for index in itertools.product(*(range(array.shape[axis]) for axis in axes)):
        slicer: list = [slice(None)] * array.ndim
        for axis, position in zip(axes, index):
            slicer[axis] = position
        # The Ellipsis keeps a lane of single entries a 0-d array, not a scalar.
        lanes.append(array[(*slicer, Ellipsis)])
    return lanes


def _check_winners(operation: str, winners: Shape, lane: Shape) -> None:
    if winners != lane:
        raise fail(operation, f"winners {winners} must have the lane shape {lane}")


def _lane_count(shape: Shape, axes: tuple[int, ...]) -> int:
    return int(np.prod([shape[axis] for axis in axes], dtype=np.int64))


def _mask_bytes(elements: int) -> int:
    """A boolean lane, padded to the 64-byte alignment Scratch keeps."""
    return -(-elements // 64) * 64


# lane_argmax ---------------------------------------------------------------------------

# lane_argmax works through the lanes a block of entries at a time (rows of the lane
# shape's first axis), so that a block's running maximum and lane numbers stay in cache
# from one lane's passes to the next. Every entry is computed the same way whatever the
# block: the blocks change where the passes start, not what they compute.
_BLOCK_ENTRIES = 1 << 16


def _block_rows(lane: tuple[int, ...]) -> int:
    """How many rows of a (non-scalar) lane of shape `lane` one block takes."""
    per_row = math.prod(lane[1:])
    return max(1, min(lane[0], _BLOCK_ENTRIES // max(1, per_row)))


def _blocks(lane: tuple[int, ...]) -> list:
    """Index expressions that cover a lane of shape `lane` block by block."""
    if not lane:
        return [Ellipsis]
    rows = _block_rows(lane)
    return [slice(first, first + rows) for first in range(0, lane[0], rows)]


def _lane_number_type(lanes: int) -> np.dtype:
    """The narrowest unsigned integer type holding every lane number."""
    return np.min_scalar_type(lanes - 1)


def _infer_lane_argmax(operand: Shape, axes: tuple[int, ...] = (0,)) -> Shape:
    return _lane_shape("lane_argmax", operand, tuple(axes))


def _lane_argmax_workspace(operand: Shape, axes: tuple[int, ...] = (0,)) -> int:
    """One block's comparison, lane numbers, candidates and running maximum, in 4-byte
    elements."""
    lane = tuple(_lane_shape("lane_argmax", operand, tuple(axes)))
    entries = _block_rows(lane) * math.prod(lane[1:]) if lane else 1
    number = _lane_number_type(_lane_count(operand, tuple(axes))).itemsize
    scratch = _mask_bytes(entries) + 2 * _mask_bytes(entries * number) + entries * 4
    return -(-scratch // 4) + 16


def _derive_lane_argmax(algebra, inputs, output, gradient, needs, **attributes):
    # Lane numbers are piecewise constant in the operand: flat wherever they have a
    # derivative (as heaviside), so they send nothing back, and say so by this rule.
    return (None,)


@primitive(
    "lane_argmax",
    1,
    _infer_lane_argmax,
    _derive_lane_argmax,
    memory=MemoryRules(workspace=_lane_argmax_workspace),
    corner=Corner(own_output, "a pooling lanes' tie"),
)
def lane_argmax(operand, out=None, workspace=None, axes=(0,)):
    """The number of the lane winning each entry: the first lane holding the maximum."""
    lanes = _lanes(operand, tuple(axes))
    if out is None:
        out = np.empty(lanes[0].shape, dtype=operand.dtype)
    if len(lanes) == 1:
        out.fill(0)
        return out
    # Lane numbers are counted in the narrowest integers (a byte for up to 256 lanes)
    # and converted to floats once: a quarter of the bytes per pass of float numbers.
    number_type = _lane_number_type(len(lanes))
    usable = workspace if workspace is not None and workspace.itemsize >= 4 else None
    for block in _blocks(lanes[0].shape):
        scratch = Scratch(usable)
        parts = [lane[block] for lane in lanes]
        shape = parts[0].shape
        better = scratch.empty(shape, bool)
        numbers = scratch.empty(shape, number_type)
        np.greater(parts[1], parts[0], out=better)
        np.copyto(numbers, better)
        if len(parts) > 2:
            candidate = scratch.empty(shape, number_type)
            best = np.maximum(parts[0], parts[1], out=scratch.empty(shape, operand.dtype))
            for number, lane in enumerate(parts[2:], start=2):
                np.greater(lane, best, out=better)
                # Lane numbers only grow, so "the latest lane that was better" is a
                # maximum (many times faster than a masked copy of the number).
                np.multiply(better, number_type.type(number), out=candidate)
                np.maximum(numbers, candidate, out=numbers)
                if number < len(parts) - 1:
                    np.maximum(best, lane, out=best)
        np.copyto(out[block], numbers)
    return out


# lane_max ------------------------------------------------------------------------------


def _winning_lane_rule(operation: str):
    """The shape rule of an operation taking each entry of `operand`'s winning lane."""

    def infer(operand: Shape, winners: Shape, axes: tuple[int, ...] = (0,)) -> Shape:
        lane = _lane_shape(operation, operand, tuple(axes))
        _check_winners(operation, winners, lane)
        return lane

    return infer


def _derive_winning_lane(algebra, inputs, output, gradient, needs, axes=(0,)):
    # lane_max and lane_select both pass on the winning lane's entry: its gradient goes
    # back to that lane; the winners (piecewise constant) get nothing.
    extents = tuple(algebra.shape(inputs[0])[axis] for axis in axes)
    return (algebra.lane_place(inputs[1], gradient, axes=axes, extents=extents), None)


def _lane_winners(inputs, output, **attributes):
    return lane_argmax.kernel(inputs[0], **attributes)


@primitive(
    "lane_max",
    2,
    _winning_lane_rule("lane_max"),
    _derive_winning_lane,
    corner=Corner(_lane_winners, "a pooling lanes' tie"),
)
def lane_max(operand, winners, out=None, axes=(0,)):
    """The largest lane of `operand`: `maximum` folded over the lanes in order (`winners`,
    which must be `lane_argmax(operand)`, is for the derivative)."""
    lanes = _lanes(operand, tuple(axes))
    if out is None:
        out = np.empty(lanes[0].shape, dtype=operand.dtype)
    if len(lanes) == 1:
        np.copyto(out, lanes[0])
        return out
    np.maximum(lanes[0], lanes[1], out=out)
    for lane in lanes[2:]:
        np.maximum(out, lane, out=out)
    return out


# lane_place ----------------------------------------------------------------------------


def _infer_lane_place(
    winners: Shape, gradient: Shape, axes: tuple[int, ...] = (0,), extents: tuple[int, ...] = (1,)
) -> Shape:
    if gradient != winners:
        raise fail("lane_place", f"gradient {gradient} must have the winners' shape {winners}")
    return _with_lanes("lane_place", winners, tuple(axes), tuple(extents))


def _derive_lane_place(algebra, inputs, output, gradient, needs, axes=(0,), extents=(1,)):
    return (None, algebra.lane_select(gradient, inputs[0], axes=axes))


def _lane_place_workspace(winners: Shape, gradient: Shape, axes=(0,), extents=(1,)) -> int:
    """One mask, in 4-byte elements."""
    return -(-_mask_bytes(winners.volume) // 4) + 16


@primitive(
    "lane_place",
    2,
    _infer_lane_place,
    _derive_lane_place,
    memory=MemoryRules(workspace=_lane_place_workspace),
)
def lane_place(winners, gradient, out=None, workspace=None, axes=(0,), extents=(1,)):
    """`gradient` on each entry's winning lane; zeros on the other lanes."""
    axes = tuple(axes)
    if out is None:
        shape = _with_lanes("lane_place", Shape(winners.shape), axes, tuple(extents))
        out = np.empty(tuple(shape), dtype=gradient.dtype)
    scratch = Scratch(workspace if workspace is not None and workspace.itemsize >= 4 else None)
    won = scratch.empty(winners.shape, bool)
    for number, target in enumerate(_lanes(out, axes)):
        np.equal(winners, number, out=won)
        np.multiply(gradient, won, out=target)
    return out


# lane_select ---------------------------------------------------------------------------


def _lane_select_workspace(values: Shape, winners: Shape, axes=(0,)) -> int:
    """One mask, in 4-byte elements."""
    return -(-_mask_bytes(winners.volume) // 4) + 16


@primitive(
    "lane_select",
    2,
    _winning_lane_rule("lane_select"),
    _derive_winning_lane,
    memory=MemoryRules(workspace=_lane_select_workspace),
)
def lane_select(values, winners, out=None, workspace=None, axes=(0,)):
    """Each entry of `values`' winning lane."""
    lanes = _lanes(values, tuple(axes))
    if out is None:
        out = np.empty(lanes[0].shape, dtype=values.dtype)
    scratch = Scratch(workspace if workspace is not None and workspace.itemsize >= 4 else None)
    won = scratch.empty(winners.shape, bool)
    np.copyto(out, lanes[0])
    for number, lane in enumerate(lanes[1:], start=1):
        np.equal(winners, number, out=won)
        np.copyto(out, lane, where=won)
    return out


def _winners(x, axes):
    """lane_argmax recorded from `x`: the winners lane_max, lane_place and lane_select
    take (lane_max's must be lane_argmax of its own operand)."""
    return record("lane_argmax", x, axes=tuple(axes))


def _lane_max_example(name: str, shape, axes=(0,)) -> Example:
    """lane_max over lanes of distinct values, its winners found in the graph from the
    same operand: no tie for finite differences to straddle, so the winners (piecewise
    constant: lane_argmax has no derivative rule and lane_max sends it nothing) stay put."""

    def express(x):
        return record("lane_max", x, _winners(x, axes), axes=tuple(axes))

    return Example(name, distinct(shape), on_parameters(express))


def _lane_argmax_example(name: str, shape, axes=(0,)) -> Example:
    """lane_argmax has no derivative rule: its example is that a gradient flowing past
    it (`lane_select(tanh(x), lane_argmax(x))`: the sweep visits the argmax, which
    depends on x, and sends it nothing) matches finite differences, which see the
    winners as the constants they are away from ties."""

    def express(x):
        return record("lane_select", x.tanh(), _winners(x, axes), axes=tuple(axes))

    return Example(name, distinct(shape), on_parameters(express))


def _lanes_with_fixed_input(name: str, subject: str, shape, axes=(0,)) -> Example:
    """For lane_place and lane_select: the winners are lane_argmax of a fixed leaf of
    distinct values (no tie), only the other operand varies: the gradient `[lane shape]`
    of lane_place, the values `shape` of lane_select."""
    fixed = distinct(shape)(np.random.default_rng(7))[0]
    axes = tuple(axes)
    lane = tuple(extent for axis, extent in enumerate(shape) if axis not in axes)
    extents = tuple(shape[axis] for axis in axes)
    varying = lane if subject == "lane_place" else tuple(shape)

    def build(tape, tensors):
        winners = _winners(tape.leaf(Tensor(shape, fixed, dtype=tape.dtype)), axes)
        values = tape.parameter(tensors[0])
        if subject == "lane_place":
            output = tape.record(subject, (winners, values), axes=axes, extents=extents)
        else:
            output = tape.record(subject, (values, winners), axes=axes)
        return output, [values.symbol]

    return Example(name, normal(varying), build)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "lane_argmax",
    _lane_argmax_example("lane_argmax_4_lanes", (4, 3, 2)),
    _lane_argmax_example("lane_argmax_pooling_axes", (1, 2, 2, 2, 2, 3), axes=(2, 4)),
)

declare_examples(
    "lane_max",
    _lane_max_example("lane_max_1_lane", (1, 3, 2)),
    _lane_max_example("lane_max_2_lanes", (2, 3, 4)),
    _lane_max_example("lane_max_4_lanes", (4, 5, 3)),
    _lane_max_example("lane_max_4_lanes_rank3", (4, 2, 3, 2)),
    _lane_max_example("lane_max_9_lanes_rank1", (9, 4)),
    _lane_max_example("lane_max_5_lanes_rank0", (5,)),
    _lane_max_example("lane_max_middle_axis", (3, 4, 2), axes=(1,)),
    _lane_max_example("lane_max_middle_axis_1_lane", (2, 1, 3), axes=(1,)),
    _lane_max_example("lane_max_pooling_axes", (2, 2, 2, 3, 2, 3), axes=(2, 4)),
)

declare_examples(
    "lane_place",
    _lanes_with_fixed_input("lane_place_2_lanes", "lane_place", (2, 3, 4)),
    _lanes_with_fixed_input("lane_place_4_lanes_rank3", "lane_place", (4, 2, 3, 2)),
    _lanes_with_fixed_input("lane_place_last_axis", "lane_place", (3, 2, 5), axes=(2,)),
    _lanes_with_fixed_input(
        "lane_place_pooling_axes", "lane_place", (2, 2, 2, 1, 2, 3), axes=(2, 4)
    ),
)

declare_examples(
    "lane_select",
    _lanes_with_fixed_input("lane_select_2_lanes", "lane_select", (2, 3, 4)),
    _lanes_with_fixed_input("lane_select_4_lanes_rank3", "lane_select", (4, 2, 3, 2)),
    _lanes_with_fixed_input("lane_select_last_axis", "lane_select", (3, 2, 5), axes=(2,)),
    _lanes_with_fixed_input(
        "lane_select_pooling_axes", "lane_select", (2, 2, 2, 1, 2, 3), axes=(2, 4)
    ),
)

# Emission: the winning lane picked by its number, so the peer's gradient reaches the
# winner alone, as lane_max's rule sends it (see topos.ops.emission) --------------------


def _emit_lane_argmax(xp, x, axes=(0,)):
    return xp.as_float(xp.argmax(xp.lanes_first(x, axes), 0))


def _emit_winning_lane(xp, values, winners, axes=(0,)):
    lanes = xp.lanes_first(values, axes)
    return xp.take_along(lanes, xp.indices(xp.stop_gradient(winners))[None], 0)[0]


def _emit_lane_place(xp, winners, gradient, axes=(0,), extents=(1,)):
    count = int(np.prod(extents))
    placed = xp.one_hot_lanes(winners, count) * gradient[None]
    return xp.lanes_back(placed, axes, extents)


declare_emission("lane_argmax", _emit_lane_argmax)
declare_emission("lane_max", _emit_winning_lane)
declare_emission("lane_place", _emit_lane_place)
declare_emission("lane_select", _emit_winning_lane)
