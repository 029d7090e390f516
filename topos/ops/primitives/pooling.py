"""max_pool and its derivative pair: max_pool_route and max_pool_pick.

`max_pool(x [N, C, H, W], size, stride)` is the largest lane of each
`size x size` window, found exactly as the composed form finds it: a left-biased
`maximum` over the lanes in row-major order, `L_0 = lane_0`, `L_k = max(L_{k-1},
lane_k)`. Its derivative sends each window's gradient to the lane that composed
chain would send it to: lane k >= 1 *improves* when `lane_k > L_{k-1}`, the
last lane that improves wins, and lane 0 wins when none does. For numbers that is
the first lane holding the maximum, so on a tie the earliest lane gets the
gradient, as in PyTorch.

- `max_pool_route(x, g)`: each window's gradient `g` placed on its winning lane
  of `x`'s shape (zeros elsewhere) — the derivative of max_pool.
- `max_pool_pick(x, h)`: the winning lane's entry of `h` (of `x`'s shape) for
  each window — route's adjoint in `g`, and route is pick's adjoint in `h`.

The winners are boolean masks built from comparisons alone (no argmax, no
index arithmetic), so route and pick only ever copy or multiply by 0 and 1:
the same bits as the composed form. Neither is differentiable in `x` (the
winners are piecewise constant), so their rules send `x` nothing.

Speed: when the windows tile the input exactly (stride = size, extents
divisible: the usual 2x2 pooling), the kernels first copy the input into *lane
planes*, one contiguous block per lane in the input's own memory order, so the
maxima and comparisons run over contiguous memory instead of short strided runs.
"""

from __future__ import annotations

import math

import numpy as np

from topos.ops.corner import Corner
from topos.ops.emission import declare_emission
from topos.ops.example import Example, distinct, normal, recorded
from topos.ops.memory_order import follows_first
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.ops.split_view import split_axis
from topos.tensor import Shape, Tensor


def _pooled_shape(operation: str, operand: Shape, size: int, stride: int) -> Shape:
    if size < 1 or stride < 1:
        raise fail(operation, f"window size {size} and stride {stride} must be positive")
    if operand.rank != 4:
        raise fail(operation, f"input {operand} must be [N, C, H, W]")
    batch, channels, height, width = operand
    if height < size or width < size:
        raise fail(operation, f"a {size}x{size} window does not fit input {operand}")
    return Shape((batch, channels, (height - size) // stride + 1, (width - size) // stride + 1))


def _lanes(array: np.ndarray, pooled: tuple[int, ...], size: int, stride: int) -> list:
    """The strided views of each window lane, in row-major lane order."""
    rows, columns = pooled[2], pooled[3]
    return [
        array[
            :,
            :,
            ky : ky + (rows - 1) * stride + 1 : stride,
            kx : kx + (columns - 1) * stride + 1 : stride,
        ]
        for ky in range(size)
        for kx in range(size)
    ]


def _tiles(shape: tuple[int, ...], size: int, stride: int) -> bool:
    """Whether the windows cover every position exactly once."""
    return stride == size and shape[2] % size == 0 and shape[3] % size == 0


def _phases(array: np.ndarray, size: int) -> np.ndarray:
    """A tiled `[N, C, H, W]` as the view `[size, size, N, C, OH, OW]`: lane first."""
    # Views whatever the strides (see split_view): [N, C, H/size, size, W/size, size].
    tiles = split_axis(split_axis(array, 3, size), 2, size)
    return tiles.transpose(3, 5, 0, 1, 2, 4)


def _plane_buffer(like: np.ndarray, size: int, dtype, workspace=None) -> np.ndarray:
    """An empty `[size, size, N, C, OH, OW]` whose every lane is one contiguous block,
    laid out in the memory order of `like` (so lanes line up with `like`'s views);
    carved from the flat `workspace` when one is given."""
    phases = _phases(like, size)
    order = sorted(range(2, 6), key=lambda axis: -abs(phases.strides[axis]))
    extents = (size, size, *(phases.shape[axis] for axis in order))
    if workspace is None:
        planes = np.empty(extents, dtype)
    else:
        planes = workspace[: int(np.prod(extents))].reshape(extents)
    position = {axis: 2 + rank for rank, axis in enumerate(order)}
    return planes.transpose(0, 1, *(position[axis] for axis in range(2, 6)))


def _lane_planes(array: np.ndarray, size: int, planes: np.ndarray | None = None, workspace=None):
    """The lanes of a tiled input, each copied into one contiguous block: the
    `[size, size, N, C, OH, OW]` planes (into `planes` when given, else carved from
    `workspace` when given), and the list of lanes in row-major order."""
    if planes is None:
        planes = _plane_buffer(array, size, array.dtype, workspace)
    np.copyto(planes, _phases(array, size))
    return planes, [planes[ky, kx] for ky in range(size) for kx in range(size)]


# max_pool_route works through the batch a few images at a time, in lane planes
# reused from chunk to chunk: each pass then runs over data still in cache, where
# whole-batch planes (4 MB for cifar10's first stage) would stream through memory
# five times. Every element is computed the same way whatever the chunk.
_CHUNK_ELEMENTS = 1 << 17


class Scratch:
    """Carves arrays one after another out of a flat workspace (None: allocates each)."""

    def __init__(self, workspace=None) -> None:
        self._bytes = None if workspace is None else workspace.view(np.uint8)
        self._offset = 0

    def empty(self, shape, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        # math.prod: np.prod of a short tuple costs microseconds, as much as a small pass.
        size = math.prod(shape) * dtype.itemsize
        start = -(-self._offset // 64) * 64
        if self._bytes is None or start + size > self._bytes.size:
            return np.empty(shape, dtype)
        self._offset = start + size
        return self._bytes[start : start + size].view(dtype).reshape(shape)


def _winners_scratch_bytes(lane_elements: int, lanes: int, itemsize: int) -> int:
    """What `winners` carves from its scratch: the running maxima and the masks."""
    if lanes < 2:
        return 0
    blocks = [lane_elements * itemsize] * (lanes - 2) + [lane_elements] * (lanes + 2)
    return sum(-(-block // 64) * 64 for block in blocks)


def _winners(lanes: list, scratch: Scratch | None = None) -> list:
    """One boolean mask per lane: where that lane wins its window (see the module);
    every temporary carved from `scratch` when one is given."""
    count = len(lanes)
    if count == 1:
        return [np.ones(lanes[0].shape, dtype=bool)]
    scratch = scratch or Scratch()
    shape, dtype = lanes[0].shape, lanes[0].dtype
    running = [lanes[0]]
    for lane in lanes[1:-1]:
        running.append(np.maximum(running[-1], lane, out=scratch.empty(shape, dtype)))
    winners: list = [None] * count
    later = scratch.empty(shape, bool)
    losers = scratch.empty(shape, bool)
    for k in range(count - 1, 0, -1):
        improves = np.greater(lanes[k], running[k - 1], out=scratch.empty(shape, bool))
        if k == count - 1:
            winners[k] = improves
            np.copyto(later, improves)
        else:
            winners[k] = np.logical_and(improves, np.logical_not(later, out=losers), out=improves)
            np.logical_or(later, improves, out=later)
    winners[0] = np.logical_not(later, out=later)
    return winners


def _infer_max_pool(operand: Shape, size: int, stride: int) -> Shape:
    return _pooled_shape("max_pool", operand, size, stride)


def _derive_max_pool(algebra, inputs, output, gradient, needs, size, stride):
    return (algebra.max_pool_route(inputs[0], gradient, size=size, stride=stride),)


def _max_pool_workspace(operand: Shape, size: int, stride: int) -> int:
    """The lane planes of a tiled input (as many elements as the input)."""
    return operand.volume if size > 1 and _tiles(tuple(operand), size, stride) else 0


def _window_winners(inputs, output, **attributes):
    # The derivative's own routing, fed ones: 1 on each window's winning lane.
    ones = np.ones(output.shape, dtype=output.dtype)
    return max_pool_route.kernel(inputs[0], ones, **attributes) != 0


@primitive(
    "max_pool",
    1,
    _infer_max_pool,
    _derive_max_pool,
    memory=MemoryRules(workspace=_max_pool_workspace, layout=follows_first),
    corner=Corner(_window_winners, "a max_pool window's tie"),
)
def max_pool(operand, out=None, workspace=None, size=1, stride=1):
    """The largest lane of each window: `maximum` folded over the lanes left to right."""
    pooled = tuple(_pooled_shape("max_pool", Shape(operand.shape), size, stride))
    if size > 1 and _tiles(operand.shape, size, stride):
        _, lanes = _lane_planes(operand, size, workspace=workspace)
    else:
        lanes = _lanes(operand, pooled, size, stride)
    if len(lanes) == 1:
        if out is None:
            return lanes[0].copy()
        np.copyto(out, lanes[0])
        return out
    largest = np.maximum(lanes[0], lanes[1], out=out)
    for lane in lanes[2:]:
        np.maximum(largest, lane, out=largest)
    return largest


def _infer_max_pool_route(operand: Shape, gradient: Shape, size: int, stride: int) -> Shape:
    pooled = _pooled_shape("max_pool_route", operand, size, stride)
    if gradient != pooled:
        raise fail("max_pool_route", f"gradient {gradient} for input {operand} must be {pooled}")
    return operand


def _derive_max_pool_route(algebra, inputs, output, gradient, needs, size, stride):
    return (None, algebra.max_pool_pick(inputs[0], gradient, size=size, stride=stride))


def _chunk_images(operand: tuple[int, ...]) -> int:
    """How many images max_pool_route takes at a time."""
    per_image = max(1, int(np.prod(operand[1:], dtype=np.int64)))
    return max(1, min(operand[0], _CHUNK_ELEMENTS // per_image))


def _max_pool_route_workspace(operand: Shape, gradient: Shape, size: int, stride: int) -> int:
    """The lane planes of one chunk of images."""
    extents = tuple(operand)
    if size > 1 and _tiles(extents, size, stride) and extents[0]:
        planes = _chunk_images(extents) * int(np.prod(extents[1:], dtype=np.int64))
        # Then the winners' scratch, counted in 4-byte elements (the kernel allocates
        # what a narrower dtype's workspace cannot hold).
        scratch = _winners_scratch_bytes(planes // (size * size), size * size, 4)
        return planes + -(-scratch // 4) + 16
    return 0


@primitive(
    "max_pool_route",
    2,
    _infer_max_pool_route,
    _derive_max_pool_route,
    memory=MemoryRules(workspace=_max_pool_route_workspace, layout=follows_first),
)
def max_pool_route(operand, gradient, out=None, workspace=None, size=1, stride=1):
    """Each window's gradient on the lane that won it; zeros on every other lane."""
    pooled = gradient.shape
    if out is None:
        out = np.empty_like(operand, dtype=gradient.dtype)
    batch = operand.shape[0]
    if size > 1 and _tiles(operand.shape, size, stride) and batch:
        # A chunk of images at a time: its lanes are copied into contiguous planes,
        # the winners found there, each lane's share made in its (now spent) plane,
        # and one copy interleaves the shares into the output.
        step = _chunk_images(operand.shape)
        if gradient.dtype != operand.dtype:
            workspace = None
        planes = _plane_buffer(operand[:step], size, operand.dtype, workspace)
        extra = None if workspace is None else workspace[planes.size :]
        shares = planes
        if gradient.dtype != operand.dtype:
            shares = _plane_buffer(operand[:step], size, gradient.dtype)
        for first in range(0, batch, step):
            last = min(first + step, batch)
            _, lanes = _lane_planes(operand[first:last], size, planes[:, :, : last - first])
            won_by_lane = _winners(lanes, Scratch(extra))
            chunk = shares[:, :, : last - first]
            for lane, won in enumerate(won_by_lane):
                np.multiply(gradient[first:last], won, out=chunk[lane // size, lane % size])
            np.copyto(_phases(out[first:last], size), chunk)
        return out
    won_by_lane = _winners(_lanes(operand, pooled, size, stride))
    targets = _lanes(out, pooled, size, stride)
    if _tiles(operand.shape, size, stride):
        for target, won in zip(targets, won_by_lane):
            np.multiply(gradient, won, out=target)
        return out
    # Windows overlap or leave a margin: accumulate the lanes, in lane order.
    out.fill(0)
    for target, won in zip(targets, won_by_lane):
        np.add(target, np.multiply(gradient, won), out=target)
    return out


def _infer_max_pool_pick(operand: Shape, values: Shape, size: int, stride: int) -> Shape:
    pooled = _pooled_shape("max_pool_pick", operand, size, stride)
    if values != operand:
        raise fail("max_pool_pick", f"values {values} must have the input's shape {operand}")
    return pooled


def _derive_max_pool_pick(algebra, inputs, output, gradient, needs, size, stride):
    return (None, algebra.max_pool_route(inputs[0], gradient, size=size, stride=stride))


@primitive("max_pool_pick", 2, _infer_max_pool_pick, _derive_max_pool_pick)
def max_pool_pick(operand, values, out=None, size=1, stride=1):
    """For each window of `operand`, the entry of `values` on the lane that won it."""
    pooled = tuple(_pooled_shape("max_pool_pick", Shape(operand.shape), size, stride))
    won_by_lane = _winners(_lanes(operand, pooled, size, stride))
    picks = _lanes(values, pooled, size, stride)
    if out is None:
        out = np.empty(pooled, dtype=values.dtype)
    np.copyto(out, picks[0])
    for pick, won in zip(picks[1:], won_by_lane[1:]):
        np.copyto(out, pick, where=won)
    return out


def _max_pool_example(name: str, shape: tuple[int, ...], size: int, stride: int) -> Example:
    """max_pool over distinct values (no ties, so every window has one winner)."""
    return Example(name, distinct(shape), recorded("max_pool", size=size, stride=stride))


def _pool_with_fixed_input(name: str, subject: str, shape, size: int, stride: int) -> Example:
    """route and pick are flat in the pooled input (winners are piecewise constant), so
    the input is a fixed leaf of distinct values and only the gradient operand varies."""
    fixed = distinct(shape)(np.random.default_rng(7))[0]
    pooled = max_pool.infer(Shape(shape), size=size, stride=stride)
    varying = tuple(pooled) if subject == "max_pool_route" else shape

    def build(tape, tensors):
        operand = tape.leaf(Tensor(shape, fixed, dtype=tape.dtype))
        values = tape.parameter(tensors[0])
        output = tape.record(subject, (operand, values), size=size, stride=stride)
        return output, [values.symbol]

    return Example(name, normal(varying), build)


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "max_pool",
    _max_pool_example("max_pool_fused_2x2", (2, 3, 4, 6), size=2, stride=2),
    _max_pool_example("max_pool_fused_3x3_stride2", (1, 2, 5, 5), size=3, stride=2),
)

declare_examples(
    "max_pool_route",
    _pool_with_fixed_input("max_pool_route_2x2", "max_pool_route", (2, 3, 4, 6), 2, 2),
    _pool_with_fixed_input("max_pool_route_2x2_stride1", "max_pool_route", (1, 2, 4, 5), 2, 1),
)

declare_examples(
    "max_pool_pick",
    _pool_with_fixed_input("max_pool_pick_2x2", "max_pool_pick", (2, 3, 4, 6), 2, 2),
    _pool_with_fixed_input("max_pool_pick_3x3_stride2", "max_pool_pick", (1, 2, 5, 5), 3, 2),
)

# Emission: max_pool as the peer's own max pool (its gradient goes to each window's first
# largest entry, as the rule sends it); its derivative pair by each window's lanes as
# strided slices, compared in order so the winner is the first largest lane -----------


def _pool_lanes(xp, x, size, stride):
    """The strided slices of `x` [N, C, H, W], one per window lane, row-major."""
    height, width = _pooled_shape("max_pool", Shape(tuple(x.shape)), size, stride)[2:]
    return [
        x[
            :,
            :,
            i : i + stride * (height - 1) + 1 : stride,
            j : j + stride * (width - 1) + 1 : stride,
        ]
        for i in range(size)
        for j in range(size)
    ]


def _pool_winners(xp, lanes):
    """The number of each window's first winning lane, as floats (no gradient)."""
    best, winners = xp.stop_gradient(lanes[0]), xp.zeros(tuple(lanes[0].shape))
    for number, lane in enumerate(lanes[1:], start=1):
        lane = xp.stop_gradient(lane)
        wins = lane > best
        winners = xp.where(wins, xp.zeros_like(winners) + number, winners)
        best = xp.where(wins, lane, best)
    return winners


def _lane_map(shape, size, stride):
    numbers = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64).reshape(shape)
    return np.stack(_pool_lanes(None, numbers, size, stride))


def _emit_max_pool_route(xp, x, gradient, size=1, stride=1):
    lanes = _pool_lanes(xp, x, size, stride)
    chosen = xp.one_hot_lanes(_pool_winners(xp, lanes), len(lanes)) * gradient[None]
    return xp.scatter_flat(chosen, _lane_map(tuple(x.shape), size, stride), tuple(x.shape))


def _emit_max_pool_pick(xp, x, values, size=1, stride=1):
    winners = _pool_winners(xp, _pool_lanes(xp, x, size, stride))
    picked = xp.stack(_pool_lanes(xp, values, size, stride))
    return xp.take_along(picked, xp.indices(winners)[None], 0)[0]


declare_emission("max_pool", lambda xp, x, size=1, stride=1: xp.max_pool(x, size, stride))
declare_emission("max_pool_route", _emit_max_pool_route)
declare_emission("max_pool_pick", _emit_max_pool_pick)
