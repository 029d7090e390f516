"""lane_argmax, lane_max, and lane_max's derivative pair lane_place and lane_select.

What these tests prove, beyond the finite-difference and route-parity checks that the
lane primitives' declared examples get from test_derivatives and
test_route_parity (which, being drawn away from ties, cannot see a tie):

- `lane_argmax` is `np.argmax` over the lane axes (lanes numbered in row-major order
  of their indices, the first maximal lane winning) in x's float dtype, on random
  data and on ties, constructed ones included (`-0.0` against `+0.0` is a tie), for
  lanes on axis 0, on axes (2, 4) of a pooling reshape, on a middle axis, on a last
  axis and on an axis of extent 1; `lane_max` is the left-biased `np.maximum` fold
  bit for bit (NaN included) whatever its `winners` operand holds;
- `lane_place` puts `g` on the winning lane and zeros on every other, `lane_select`
  reads the winning lane, and the two are adjoint; none of the four kernels' bits
  depend on the layout of `out` or operands, or on the workspace (none, sized,
  too small, too narrow), and given their workspace, lane_argmax, lane_place and
  lane_select allocate next to nothing;
- over the pooling phases of an image, `lane_max` is `max_pool` and, routed by
  `lane_argmax`, `lane_place` is `max_pool_route` and `lane_select` is
  `max_pool_pick`, bit for bit, ties and NaN included;
- on both routes, ties send the gradient to the earliest lane, and the winners
  operand of lane_max, lane_place and lane_select never receives a gradient;
- the shape rules refuse bad lane axes, winners of the wrong shape and extents that
  do not match the axes with a one-line ShapeError naming the primitive, before
  recording anything.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.support.allocations import peak_allocation
from tests.support.cases import on_parameters
from tests.support.routes import ROUTES, weighting
from topos import ShapeError, Tape, Tensor
from topos.ops import REGISTRY
from topos.tensor import Shape


def kernel(name: str):
    return REGISTRY[name].kernel


def contiguous_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


# By hand ------------------------------------------------------------------------------


def lane_major(x: np.ndarray, axes) -> np.ndarray:
    """`x` as `[lanes, *lane shape]`: its lane axes moved first and flattened, so lane
    `k` is the `k`-th index of the lane axes in row-major order."""
    axes = tuple(axes)
    moved = np.moveaxis(x, axes, tuple(range(len(axes))))
    return moved.reshape(-1, *moved.shape[len(axes) :])


def from_lane_major(flat: np.ndarray, shape, axes) -> np.ndarray:
    """The inverse of `lane_major` for an array of `shape`."""
    axes = tuple(axes)
    extents = tuple(shape[axis] for axis in axes)
    lanes = flat.reshape(*extents, *flat.shape[1:])
    return np.moveaxis(lanes, tuple(range(len(axes))), axes)


def first_winner(x: np.ndarray, axes) -> np.ndarray:
    """The number of the first lane holding each entry's maximum (np.argmax answers
    the first occurrence), in x's dtype."""
    return np.argmax(lane_major(x, axes), axis=0).astype(x.dtype)


def fold(x: np.ndarray, axes) -> np.ndarray:
    """The left-biased maximum fold over the lanes."""
    return functools.reduce(np.maximum, list(lane_major(x, axes)))


def placed(winners: np.ndarray, g: np.ndarray, shape, axes) -> np.ndarray:
    """`g` on each entry's winning lane, zeros elsewhere."""
    flat = np.zeros((int(np.prod([shape[axis] for axis in axes])), *g.shape), g.dtype)
    np.put_along_axis(flat, winners.astype(np.intp)[None], g[None], axis=0)
    return from_lane_major(flat, shape, axes)


def selected(values: np.ndarray, winners: np.ndarray, axes) -> np.ndarray:
    """Each entry of `values` on the winning lane."""
    flat = lane_major(values, axes)
    return np.take_along_axis(flat, winners.astype(np.intp)[None], axis=0)[0]


def lane_shape(shape, axes) -> tuple[int, ...]:
    return tuple(extent for axis, extent in enumerate(shape) if axis not in axes)


def extents_of(shape, axes) -> tuple[int, ...]:
    return tuple(shape[axis] for axis in axes)


def tied(shape, seed: int, axes=(0,), dtype=np.float32) -> np.ndarray:
    """Lanes (along `axes`) with ties everywhere: few distinct values, signed zeros,
    and every third entry equal on all its lanes."""
    generator = np.random.default_rng(seed)
    x = generator.choice(np.array([-1.0, -0.0, 0.0, 2.0], dtype), shape)
    flat = lane_major(x, axes).copy()
    entries = flat.reshape(flat.shape[0], -1)
    entries[:, ::3] = entries[:1, ::3]
    return np.ascontiguousarray(from_lane_major(flat, shape, axes))


def data(shape, seed: int, axes) -> list[np.ndarray]:
    """Random normals, and tied lanes."""
    generator = np.random.default_rng(seed)
    return [generator.standard_normal(shape).astype(np.float32), tied(shape, seed, axes)]


# (x's shape, lane axes): lanes on axis 0 (phase-major rows), on axes (2, 4) of a
# `[N, OH/P, P, OW/P, P, F]` product, on a middle and a last axis, on an axis of
# extent 1 (one lane), on two axes that are not the pooling ones, and lanes of rank 0.
LAYOUTS = [
    ((1, 5), (0,)),
    ((2, 3, 4), (0,)),
    ((4, 2, 3, 2), (0,)),
    ((9, 4, 3), (0,)),
    ((7,), (0,)),
    ((2, 3, 2, 4, 2, 5), (2, 4)),
    ((1, 2, 3, 2, 3, 2), (2, 4)),
    ((3, 4, 5), (1,)),
    ((3, 1, 5), (1,)),
    ((3, 2, 5), (2,)),
    ((3, 2, 2, 4), (0, 3)),
]


def has_ties(x: np.ndarray, axes) -> bool:
    """Whether some entry's maximum is held by more than one lane."""
    flat = lane_major(x, axes)
    return bool(np.any(np.sum(flat == flat.max(axis=0), axis=0) > 1))


# lane_argmax --------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "axes"), LAYOUTS, ids=str)
def test_lane_argmax_is_the_first_maximal_lane(shape, axes):
    for x in data(shape, 1, axes):
        expected = first_winner(x, axes)
        result = kernel("lane_argmax")(x, axes=axes)
        assert result.dtype == np.float32 and result.shape == lane_shape(shape, axes)
        np.testing.assert_array_equal(result, expected)
        # float64 in, float64 lane numbers out.
        again = kernel("lane_argmax")(x.astype(np.float64), axes=axes)
        assert again.dtype == np.float64
        np.testing.assert_array_equal(again, expected)
        # The shape rule agrees with the kernel.
        inferred = REGISTRY["lane_argmax"].infer(Shape(shape), axes=axes)
        assert tuple(inferred) == result.shape
    x = tied(shape, 2, axes)
    if np.prod(extents_of(shape, axes)) > 1:
        # The tied data is discriminating: the last maximal lane would differ.
        assert has_ties(x, axes)
        flat = lane_major(x, axes)
        last = flat.shape[0] - 1 - np.argmax(flat[::-1], axis=0)
        assert np.any(last != first_winner(x, axes))


def test_lane_argmax_on_constructed_ties_by_hand():
    # Columns: a plain maximum; a tie of the first two; -0.0 before +0.0 and +0.0
    # before -0.0 (equal: the first wins either way); all equal; the last alone.
    x = np.array(
        [
            [3.0, 5.0, -0.0, 0.0, 1.0, -2.0],
            [4.0, 5.0, 0.0, -0.0, 1.0, -3.0],
            [1.0, 2.0, 0.0, 0.0, 1.0, -1.0],
        ],
        np.float32,
    )
    np.testing.assert_array_equal(kernel("lane_argmax")(x), [1.0, 0.0, 0.0, 0.0, 0.0, 2.0])
    np.testing.assert_array_equal(kernel("lane_argmax")(x.T, axes=(1,)), kernel("lane_argmax")(x))
    # The winner is the earliest lane holding the maximum, not the last one that does.
    np.testing.assert_array_equal(kernel("lane_argmax")(x[::-1]), [1.0, 1.0, 0.0, 0.0, 0.0, 0.0])


def test_lane_argmax_numbers_lanes_in_row_major_order_of_the_lane_axes():
    # One entry, 2x3 lanes on axes (0, 2): lane (i, j) is number 3*i + j.
    for i, j in np.ndindex(2, 3):
        x = np.zeros((2, 1, 3), np.float32)
        x[i, 0, j] = 1.0
        assert kernel("lane_argmax")(x, axes=(0, 2)).tolist() == [3.0 * i + j]


@pytest.mark.parametrize(("shape", "axes"), LAYOUTS[:7], ids=str)
def test_lane_argmax_bits_ignore_layouts_workspace_and_out(shape, axes):
    x = tied(shape, 3, axes)
    reference = kernel("lane_argmax")(x, axes=axes)
    for layout in (np.asfortranarray(x), np.flip(np.flip(x, 0).copy(), 0)):
        assert kernel("lane_argmax")(layout, axes=axes).tobytes() == reference.tobytes()
    for workspace in workspaces("lane_argmax", (Shape(shape),), axes=axes):
        for out in outs(reference.shape):
            result = kernel("lane_argmax")(x, out=out, workspace=workspace, axes=axes)
            assert result is out
            assert contiguous_bytes(out) == reference.tobytes()


def outs(shape, dtype=np.float32) -> list[np.ndarray]:
    """Slots of every layout, filled with NaN so that any entry left unwritten shows."""
    shape = tuple(shape)
    slots = [np.empty(shape, dtype), np.asfortranarray(np.empty(shape, dtype))]
    if shape:
        slots.append(np.empty((shape[0] * 2, *shape[1:]), dtype)[::2])
        slots.append(np.empty((*shape[:-1], shape[-1] + 3), dtype)[..., 1:-2])
    for slot in slots:
        slot.fill(np.nan)
    return slots


def workspaces(operation: str, shapes, **attributes) -> list:
    """No workspace, the sized one (NaN-filled), one too small and one too narrow."""
    elements = REGISTRY[operation].memory.workspace(*shapes, **attributes)
    assert elements > 0
    return [
        None,
        np.full(elements, np.nan, np.float32),
        np.full(1, np.nan, np.float32),
        np.zeros(elements * 2, np.float16),
    ]


# lane_max -----------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "axes"), LAYOUTS, ids=str)
def test_lane_max_is_the_left_biased_maximum_fold(shape, axes):
    generator = np.random.default_rng(4)
    special = generator.choice(np.array([np.nan, -np.inf, 1.0, -0.0, 0.0], np.float32), shape)
    for x in [*data(shape, 5, axes), special]:
        winners = kernel("lane_argmax")(x, axes=axes)
        expected = fold(x, axes)
        result = kernel("lane_max")(x, winners, axes=axes)
        assert result.dtype == np.float32 and result.shape == lane_shape(shape, axes)
        assert contiguous_bytes(result) == contiguous_bytes(expected)
        for out in outs(expected.shape):
            again = kernel("lane_max")(np.asfortranarray(x), winners, out=out, axes=axes)
            assert again is out
            assert contiguous_bytes(out) == contiguous_bytes(expected)


def test_lane_max_is_the_fold_not_the_winning_lane_on_signed_zeros():
    # The value is the fold's: np.maximum answers its second operand on a tie of
    # zeros, so a -0.0 and +0.0 tie pools to the last lane's zero, while the winner
    # (which only routes gradients) is the first lane. max_pool pools the same way.
    x = np.array([[-0.0, 0.0], [0.0, -0.0]], np.float32)
    winners = kernel("lane_argmax")(x)
    np.testing.assert_array_equal(winners, [0.0, 0.0])
    pooled = kernel("lane_max")(x, winners)
    assert pooled.tobytes() == np.maximum(x[0], x[1]).tobytes()
    picked = kernel("lane_select")(x, winners)
    assert picked.tobytes() == x[0].tobytes()


def test_lane_max_does_not_read_its_winners():
    # `winners` must be lane_argmax of the operand: that is lane_max's precondition,
    # not something it checks (it would cost the very pass lane_argmax makes). The
    # value is the fold over the operand alone; the winners are only for the
    # derivative. So winners that break the precondition change no bit of the value.
    x = tied((4, 6, 5), 6)
    reference = kernel("lane_max")(x, kernel("lane_argmax")(x))
    assert reference.tobytes() == fold(x, (0,)).tobytes()
    for garbage in (np.zeros((6, 5)), np.full((6, 5), np.nan), np.full((6, 5), 17.0)):
        result = kernel("lane_max")(x, garbage.astype(np.float32))
        assert result.tobytes() == reference.tobytes()


def test_lane_max_of_rank0_lanes_without_out():
    x = np.array([1.0, 3.0, 2.0], np.float32)
    result = kernel("lane_max")(x, kernel("lane_argmax")(x))
    assert isinstance(result, np.ndarray) and result.shape == () and result == 3.0


# lane_place and lane_select -----------------------------------------------------------


@pytest.mark.parametrize(("shape", "axes"), LAYOUTS, ids=str)
def test_lane_place_and_select_follow_the_winners(shape, axes):
    generator = np.random.default_rng(7)
    lane = lane_shape(shape, axes)
    extents = extents_of(shape, axes)
    for x in data(shape, 8, axes):
        winners = kernel("lane_argmax")(x, axes=axes)
        g = generator.standard_normal(lane).astype(np.float32)
        h = generator.standard_normal(shape).astype(np.float32)
        place = kernel("lane_place")(winners, g, axes=axes, extents=extents)
        assert place.dtype == np.float32 and place.shape == shape
        np.testing.assert_array_equal(place, placed(winners, g, shape, axes))
        # Every entry off the winning lane is a zero (of either sign: `g * 0`).
        lanes = int(np.prod(extents))
        entries = lane_major(place, axes).reshape(lanes, -1)
        off = entries[np.arange(lanes)[:, None] != winners.reshape(1, -1)]
        assert off.size == (lanes - 1) * winners.size and np.all(off == 0)
        pick = kernel("lane_select")(h, winners, axes=axes)
        assert pick.dtype == np.float32 and pick.shape == lane
        assert contiguous_bytes(pick) == contiguous_bytes(selected(h, winners, axes))
        # Reading x's own winning lane gives its maximum.
        np.testing.assert_array_equal(kernel("lane_select")(x, winners, axes=axes), fold(x, axes))
        # The shape rules agree with the kernels.
        rule = REGISTRY["lane_place"].infer(Shape(lane), Shape(lane), axes=axes, extents=extents)
        assert tuple(rule) == shape
        rule = REGISTRY["lane_select"].infer(Shape(shape), Shape(lane), axes=axes)
        assert tuple(rule) == lane


@pytest.mark.parametrize(("shape", "axes"), LAYOUTS, ids=str)
def test_lane_place_and_select_are_adjoint(shape, axes):
    generator = np.random.default_rng(9)
    x = tied(shape, 10, axes, np.float64)
    winners = kernel("lane_argmax")(x, axes=axes)
    g = generator.standard_normal(lane_shape(shape, axes))
    h = generator.standard_normal(shape)
    place = kernel("lane_place")(winners, g, axes=axes, extents=extents_of(shape, axes))
    pick = kernel("lane_select")(h, winners, axes=axes)
    assert place.dtype == pick.dtype == np.float64
    assert np.isclose(np.sum(place * h), np.sum(g * pick), rtol=1e-12, atol=0)


def test_lane_place_and_select_by_hand():
    winners = np.array([1.0, 0.0, 2.0, 0.0], np.float32)
    g = np.array([10.0, 20.0, 30.0, -40.0], np.float32)
    place = kernel("lane_place")(winners, g, extents=(3,))
    np.testing.assert_array_equal(
        place, [[0.0, 20.0, 0.0, -40.0], [10.0, 0.0, 0.0, 0.0], [0.0, 0.0, 30.0, 0.0]]
    )
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(kernel("lane_select")(values, winners), [4.0, 1.0, 10.0, 3.0])


def _big(shape=(4, 37, 11), axes=(0,), seed=11):
    x = tied(shape, seed, axes)
    winners = kernel("lane_argmax")(x, axes=axes)
    g = np.random.default_rng(seed + 1).standard_normal(winners.shape).astype(np.float32)
    return x, winners, g


@pytest.mark.parametrize("axes", [(0,), (1, 3)], ids=str)
def test_lane_place_and_select_bits_ignore_layouts_workspace_and_out(axes):
    shape = (4, 3, 37, 2)
    x, winners, g = _big(shape, axes)
    extents = extents_of(shape, axes)
    place = kernel("lane_place")(winners, g, axes=axes, extents=extents)
    pick = kernel("lane_select")(x, winners, axes=axes)
    # Strided operands give the same bits.
    fortran = np.asfortranarray
    again = kernel("lane_place")(fortran(winners), fortran(g), axes=axes, extents=extents)
    assert contiguous_bytes(again) == place.tobytes()
    again = kernel("lane_select")(fortran(x), fortran(winners), axes=axes)
    assert contiguous_bytes(again) == pick.tobytes()
    lane = Shape(winners.shape)
    for workspace in workspaces("lane_place", (lane, lane), axes=axes, extents=extents):
        for out in outs(shape):
            result = kernel("lane_place")(
                winners, g, out=out, workspace=workspace, axes=axes, extents=extents
            )
            assert result is out
            assert contiguous_bytes(out) == place.tobytes()
    for workspace in workspaces("lane_select", (Shape(shape), lane), axes=axes):
        for out in outs(lane):
            result = kernel("lane_select")(x, winners, out=out, workspace=workspace, axes=axes)
            assert result is out
            assert contiguous_bytes(out) == pick.tobytes()


# Given its workspace, a kernel allocates next to nothing; without, more than this.
LITTLE = 128 * 1024


@pytest.mark.parametrize("operation", ["lane_argmax", "lane_place", "lane_select"])
def test_lane_kernels_take_their_temporaries_from_their_workspace(operation):
    shape = (4, 4096, 64)  # a lane's mask is 256 KiB, its float32 temporaries 1 MiB
    x, winners, g = _big(shape, (0,), 13)
    if operation == "lane_argmax":
        operands, out, attributes = (x,), np.empty_like(winners), {}
        shapes = (Shape(shape),)
    elif operation == "lane_place":
        operands, out, attributes = (winners, g), np.empty_like(x), {"extents": (4,)}
        shapes = (Shape(winners.shape),) * 2
    else:
        operands, out, attributes = (x, winners), np.empty_like(g), {}
        shapes = (Shape(shape), Shape(winners.shape))
    reference = kernel(operation)(*operands, **attributes)
    workspace = np.empty(REGISTRY[operation].memory.workspace(*shapes, **attributes), np.float32)

    def run(scratch):
        return lambda: kernel(operation)(*operands, out=out, workspace=scratch, **attributes)

    assert peak_allocation(run(workspace)) < LITTLE
    assert out.tobytes() == reference.tobytes()
    # The measure is discriminating: without the workspace the temporaries show.
    assert peak_allocation(run(None)) > LITTLE


# Over the pooling phases of an image: max_pool, max_pool_route and max_pool_pick --------


def pooling_lanes(x: np.ndarray, size: int) -> np.ndarray:
    """`[N, C, H, W]` as `[size*size, N, C, H/size, W/size]`: lane `ky*size + kx`
    holds the window entries at `(ky, kx)`, max_pool's row-major lane order."""
    batch, channels, height, width = x.shape
    blocks = x.reshape(batch, channels, height // size, size, width // size, size)
    return np.ascontiguousarray(blocks.transpose(3, 5, 0, 1, 2, 4)).reshape(
        size * size, batch, channels, height // size, width // size
    )


def from_pooling_lanes(lanes: np.ndarray, shape, size: int) -> np.ndarray:
    """The inverse of `pooling_lanes`."""
    batch, channels, height, width = shape
    blocks = lanes.reshape(size, size, batch, channels, height // size, width // size)
    return blocks.transpose(2, 3, 4, 0, 5, 1).reshape(shape)


def image_data(shape, seed: int) -> list[np.ndarray]:
    """Normals; small integers after a relu (ties in most windows); and signed zeros,
    infinities and NaN."""
    generator = np.random.default_rng(seed)
    integers = np.maximum(generator.integers(-3, 3, shape), 0).astype(np.float32)
    special = np.array([np.nan, -np.inf, np.inf, 1.0, -0.0, 0.0], np.float32)
    return [
        generator.standard_normal(shape).astype(np.float32),
        integers,
        generator.choice(special, shape, p=[0.05, 0.1, 0.05, 0.3, 0.25, 0.25]),
    ]


@pytest.mark.parametrize(
    ("shape", "size"), [((2, 3, 8, 8), 2), ((1, 4, 6, 10), 2), ((2, 2, 9, 6), 3)], ids=str
)
def test_lanes_over_pooling_phases_are_max_pool_and_its_derivatives(shape, size):
    batch, channels, height, width = shape
    generator = np.random.default_rng(20)
    pooled_shape = (batch, channels, height // size, width // size)
    g = generator.standard_normal(pooled_shape).astype(np.float32)
    h = generator.standard_normal(shape).astype(np.float32)
    for x in image_data(shape, 19):
        pooled = contiguous_bytes(kernel("max_pool")(x, size=size, stride=size))
        route = contiguous_bytes(kernel("max_pool_route")(x, g, size=size, stride=size))
        pick = contiguous_bytes(kernel("max_pool_pick")(x, h, size=size, stride=size))
        # Lanes on axis 0, one block each (phase-major rows), ...
        lanes = pooling_lanes(x, size)
        winners = kernel("lane_argmax")(lanes)
        assert kernel("lane_max")(lanes, winners).tobytes() == pooled
        placed_back = kernel("lane_place")(winners, g, extents=(size * size,))
        assert contiguous_bytes(from_pooling_lanes(placed_back, shape, size)) == route
        assert kernel("lane_select")(pooling_lanes(h, size), winners).tobytes() == pick
        # ... and on axes (3, 5) of the image reshaped in place, without a copy.
        axes, extents = (3, 5), (size, size)
        blocks = x.reshape(batch, channels, height // size, size, width // size, size)
        again = kernel("lane_argmax")(blocks, axes=axes)
        assert again.tobytes() == winners.tobytes()
        assert kernel("lane_max")(blocks, again, axes=axes).tobytes() == pooled
        placed_back = kernel("lane_place")(again, g, axes=axes, extents=extents)
        assert contiguous_bytes(placed_back.reshape(shape)) == route
        values = h.reshape(blocks.shape)
        assert kernel("lane_select")(values, again, axes=axes).tobytes() == pick


# Through the routes ---------------------------------------------------------------------


def _lane_max_of(axes):
    def express(x):
        winners = x.tape.record("lane_argmax", (x,), axes=axes)
        return x.tape.record("lane_max", (x, winners), axes=axes)

    return on_parameters(express)


@pytest.mark.parametrize(("shape", "axes"), [((4, 3, 5), (0,)), ((2, 2, 3, 2, 4), (1, 3))])
def test_ties_send_the_gradient_to_the_earliest_lane_on_both_routes(shape, axes):
    x = tied(shape, 14, axes)
    assert has_ties(x, axes)
    seed = 15
    weights = weighting(lane_shape(shape, axes), seed).astype(np.float32)
    expected = placed(first_winner(x, axes), weights, shape, axes)
    outcomes = [ROUTES[route](_lane_max_of(axes), [x], seed, np.float32) for route in ROUTES]
    for outcome in outcomes:
        np.testing.assert_array_equal(outcome.gradients[0], expected)
    first, second = outcomes
    assert first.loss.tobytes() == second.loss.tobytes()
    assert first.gradients[0].tobytes() == second.gradients[0].tobytes()


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("subject", ["lane_max", "lane_place", "lane_select"])
def test_the_winners_operand_gets_no_gradient(subject, route):
    # The winners are piecewise constant in x: fed as a parameter, they get a zero
    # gradient, and the other operand a gradient that moves.
    shape, lane = (3, 2, 4), (2, 4)
    x = tied(shape, 16)
    winners = kernel("lane_argmax")(x)
    g = np.random.default_rng(17).standard_normal(lane).astype(np.float32)
    if subject == "lane_max":
        arrays, position = [x, winners], 1
        build = on_parameters(lambda a, w: a.tape.record("lane_max", (a, w)))
    elif subject == "lane_place":
        arrays, position = [winners, g], 0
        build = on_parameters(lambda w, v: w.tape.record("lane_place", (w, v), extents=(3,)))
    else:
        arrays, position = [x, winners], 1
        build = on_parameters(lambda v, w: v.tape.record("lane_select", (v, w)))
    outcome = ROUTES[route](build, arrays, 18, np.float32)
    assert outcome.gradients[position].tobytes() == np.zeros(lane, np.float32).tobytes()
    assert np.any(outcome.gradients[1 - position] != 0)


def test_lane_argmax_has_a_flat_derivative_rule():
    # Piecewise constant: its rule sends nothing back (a rule, not a missing one).
    primitive = REGISTRY["lane_argmax"]
    assert primitive.differentiable
    assert tuple(primitive.derive(None, [None], None, object(), (True,))) == (None,)
    for name in ("lane_max", "lane_place", "lane_select"):
        assert REGISTRY[name].derive is not None


# Shape errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "operands", "attributes", "words"),
    [
        ("lane_argmax", [(2, 3)], {"axes": ()}, ["lane axes []", "[2, 3]"]),
        ("lane_argmax", [(2, 3)], {"axes": (1, 0)}, ["[1, 0]", "[2, 3]"]),
        ("lane_argmax", [(2, 3)], {"axes": (0, 0)}, ["[0, 0]"]),
        ("lane_argmax", [(2, 3)], {"axes": (2,)}, ["[2]", "[2, 3]"]),
        ("lane_argmax", [(2, 3)], {"axes": (-1,)}, ["[-1]"]),
        ("lane_argmax", [()], {}, ["[0]", "[]"]),
        ("lane_argmax", [(0, 3)], {}, ["at least one lane", "[0, 3]"]),
        ("lane_max", [(2, 3), (2,)], {}, ["winners [2]", "[3]"]),
        ("lane_max", [(2, 3), (3,)], {"axes": (1,)}, ["winners [3]", "[2]"]),
        ("lane_max", [(2, 3, 4), (3, 4)], {"axes": (0, 2)}, ["winners [3, 4]", "[3]"]),
        ("lane_max", [(2, 3), (3,)], {"axes": (2,)}, ["[2]", "[2, 3]"]),
        ("lane_place", [(3,), (4,)], {"extents": (2,)}, ["gradient [4]", "[3]"]),
        ("lane_place", [(3,), (3,)], {"extents": (2, 2)}, ["extents [2, 2]"]),
        ("lane_place", [(3,), (3,)], {"axes": (0, 1), "extents": (2,)}, ["extents [2]"]),
        ("lane_place", [(3,), (3,)], {"extents": (0,)}, ["extents [0]"]),
        ("lane_place", [(3,), (3,)], {"axes": (2,), "extents": (2,)}, ["[2]", "rank 2"]),
        ("lane_place", [(3,), (3,)], {"axes": (1, 0), "extents": (2, 2)}, ["[1, 0]"]),
        ("lane_select", [(2, 3), (2,)], {}, ["winners [2]", "[3]"]),
        ("lane_select", [(2, 3), (3,)], {"axes": (5,)}, ["[5]", "[2, 3]"]),
    ],
    ids=str,
)
def test_lane_shape_errors_name_the_primitive(operation, operands, attributes, words):
    tape = Tape()
    values = [tape.parameter(Tensor.filled(list(shape), 1.0)) for shape in operands]
    recorded_before = len(tape)
    with pytest.raises(ShapeError, match=f"^{operation}: ") as caught:
        tape.record(operation, values, **attributes)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)
    assert len(tape) == recorded_before


# Known bugs, reported: strict, so each fails once its bug is fixed (then drop the mark) ---


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_winners_used_as_numbers_are_constants_to_the_gradient(route):
    # The winners are piecewise constant in x: used in arithmetic, they pass no gradient
    # to x, as lane_max, lane_place and lane_select already treat them.
    x = np.array([[1.0, 5.0], [4.0, 2.0], [0.0, 3.0]], np.float32)

    def express(a):
        winners = a.tape.record("lane_argmax", (a,))
        return winners * a.sum_along(0)

    outcome = ROUTES[route](on_parameters(express), [x], 19, np.float32)
    weights = weighting((2,), 19).astype(np.float32)
    expected = np.broadcast_to(weights * kernel("lane_argmax")(x), x.shape)
    np.testing.assert_array_equal(outcome.gradients[0], expected)
