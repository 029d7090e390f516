"""Random programs for property tests: a few parameters of random shapes, a random
sequence of primitives over them (each step's operands drawn from everything
recorded so far, so values get reused), and a scalar loss at the end.

A program is plain data, replayed onto any tape, so the same graph can be recorded
in float32 and float64 and by both routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from topos import Tape, Tensor, Value, max_pool

MAX_VOLUME = 81
MAX_RANK = 4

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)
parameter_shapes = shapes | st.lists(st.integers(1, 3), min_size=4, max_size=4).map(tuple)

# Each operation: how to record it from operand Values and static attributes.
APPLY: dict[str, Any] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "maximum": lambda a, b: a.maximum(b),
    "div": lambda a, b: a / (b * b + 1.0),
    "affine": lambda a: 0.5 - a * 1.5,
    "neg": lambda a: -a,
    "tanh": lambda a: a.tanh(),
    "relu": lambda a: a.relu(),
    "step": lambda a: a.step(),
    "exp": lambda a: a.tanh().exp(),
    "ln": lambda a: (a * a + 1.0).ln(),
    "sqrt": lambda a: (a * a + 1.0).sqrt(),
    "matmul": lambda a, b: a @ b,
    "gram": lambda a: a @ a.T,
    "matmul_nt": lambda a, b: a.tape.record("matmul_nt", (a, b)),
    "matmul_tn": lambda a, b: a.tape.record("matmul_tn", (a, b)),
    "max_pool": lambda a, size, stride: max_pool(a, size, stride),
    "im2col": lambda a, **window: a.tape.record("im2col", (a,), **window),
    "permute": lambda a, axes: a.permute(*axes),
    "reshape": lambda a, shape: a.reshape(shape),
    "sum": lambda a: a.sum(),
    "sum_along": lambda a, axis: a.sum_along(axis),
    "broadcast_along": lambda a, axis, size: a.broadcast_along(axis, size),
    "expand": lambda a, shape: a.expand(shape),
    "logsumexp": lambda a, axis: a.logsumexp(axis),
    "pad": lambda a, widths: a.pad(widths),
    "narrow": lambda a, axis, start, length: a.narrow(axis, start, length),
    "unfold": lambda a, axis, size, stride: a.unfold(axis, size, stride),
    "fold": lambda a, axis, length, stride: a.fold(axis, length, stride),
    "gather": lambda a, axis, indices: a.gather(axis, indices),
    "scatter": lambda a, axis, indices, length: a.tape.record(
        "scatter", (a,), axis=axis, indices=indices, length=length
    ),
}

BINARY_ELEMENTWISE = ("add", "sub", "mul", "maximum", "div")


@dataclass
class Program:
    """Parameter shapes, recorded steps `(operation, operand positions, attributes)`,
    the position of an extra value that joins the loss, and a seed for all values."""

    shapes: tuple[tuple[int, ...], ...]
    steps: tuple[tuple[str, tuple[int, ...], dict], ...]
    extra: int | None
    seed: int

    def arrays(self) -> list[np.ndarray]:
        """The float64 parameter values."""
        rng = np.random.default_rng(self.seed)
        return [rng.standard_normal(shape) for shape in self.shapes]

    def replay(self, values: list[Value]) -> list[Value]:
        """Records the steps after `values` (the parameters) and returns every value."""
        pool = list(values)
        for operation, operands, attributes in self.steps:
            pool.append(APPLY[operation](*(pool[i] for i in operands), **attributes))
        return pool

    def build(self, tape: Tape, tensors: list[Tensor]):
        """What `tests.library.routes` records: the loss-shaped output and the parameters."""
        parameters = [tape.parameter(tensor) for tensor in tensors]
        pool = self.replay(parameters)
        rng = np.random.default_rng(self.seed + 1)
        last = pool[-1]
        weights = tape.leaf(Tensor(last.shape, rng.standard_normal(last.shape.extents), tape.dtype))
        output = (last * weights).sum()
        if self.extra is not None:
            other = pool[self.extra]
            more = tape.leaf(
                Tensor(other.shape, rng.standard_normal(other.shape.extents), tape.dtype)
            )
            output = output + (other * more).sum()
        return output, [parameter.symbol for parameter in parameters]


def _step(draw, pool: list[Value]) -> tuple[str, tuple[int, ...], dict] | None:
    """Draws one applicable operation over the shapes in `pool`, or None."""
    operation = draw(st.sampled_from(sorted(APPLY)))
    positions = range(len(pool))
    shape_of = [value.shape for value in pool]
    first = draw(st.sampled_from(positions))
    shape = shape_of[first]
    rank = shape.rank
    if operation in BINARY_ELEMENTWISE:
        partners = [
            i for i in positions if shape_of[i] == shape or shape_of[i].rank == 0 or rank == 0
        ]
        second = draw(st.sampled_from(partners))
        if draw(st.booleans()):
            first, second = second, first
        return operation, (first, second), {}
    if operation in ("affine", "neg", "tanh", "relu", "step", "exp", "ln", "sqrt", "sum"):
        return operation, (first,), {}
    if operation == "matmul":
        partners = [
            i
            for i in positions
            if rank >= 2
            and shape_of[i].rank == rank
            and tuple(shape_of[i])[:-2] == tuple(shape)[:-2]
            and shape_of[i][-2] == shape[-1]
        ]
        if not partners:
            return None
        return operation, (first, draw(st.sampled_from(partners))), {}
    if operation in ("matmul_nt", "matmul_tn"):
        # nt: a [.., m, k] with b [.., n, k]; tn: a [.., k, m] with b [.., k, n]
        axis = -1 if operation == "matmul_nt" else -2
        partners = [
            i
            for i in positions
            if rank >= 2
            and shape_of[i].rank == rank
            and tuple(shape_of[i])[:-2] == tuple(shape)[:-2]
            and shape_of[i][axis] == shape[axis]
        ]
        if not partners:
            return None
        return operation, (first, draw(st.sampled_from(partners))), {}
    if operation == "max_pool":
        if rank != 4:
            return None
        size = draw(st.integers(1, min(2, shape[2], shape[3])))
        return operation, (first,), {"size": size, "stride": draw(st.integers(1, 2))}
    if operation == "im2col":
        if rank != 4:
            return None
        padding = draw(st.integers(0, 1))
        kernel_height = draw(st.integers(1, min(3, shape[2] + 2 * padding)))
        kernel_width = draw(st.integers(1, min(3, shape[3] + 2 * padding)))
        attributes = {
            "kernel_height": kernel_height,
            "kernel_width": kernel_width,
            "stride": draw(st.integers(1, 2)),
            "padding": padding,
        }
        return operation, (first,), attributes
    if operation == "gram":
        return (operation, (first,), {}) if rank >= 2 else None
    if operation == "permute":
        if rank < 2:
            return None
        return operation, (first,), {"axes": tuple(draw(st.permutations(range(rank))))}
    if operation == "reshape":
        options = [(shape.volume,), tuple(reversed(tuple(shape))), (*tuple(shape), 1)]
        if shape.volume == 1:
            options.append(())
        return operation, (first,), {"shape": draw(st.sampled_from(options))}
    if operation == "expand":
        return (operation, (first,), {"shape": draw(shapes)}) if rank == 0 else None
    if operation == "broadcast_along":
        axis = draw(st.integers(0, rank))
        return operation, (first,), {"axis": axis, "size": draw(st.integers(1, 3))}
    if rank == 0:
        return None
    axis = draw(st.integers(0, rank - 1))
    extent = shape[axis]
    if operation in ("sum_along", "logsumexp"):
        return operation, (first,), {"axis": axis}
    if operation == "pad":
        widths = tuple((draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in range(rank))
        return operation, (first,), {"widths": widths}
    if operation == "narrow":
        start = draw(st.integers(0, extent - 1))
        length = draw(st.integers(1, extent - start))
        return operation, (first,), {"axis": axis, "start": start, "length": length}
    if operation == "unfold":
        size = draw(st.integers(1, extent))
        return operation, (first,), {"axis": axis, "size": size, "stride": draw(st.integers(1, 2))}
    if operation == "fold":
        if rank < 2 or axis == rank - 1:
            return None
        stride = draw(st.integers(1, 2))
        length = (extent - 1) * stride + shape[-1]
        return operation, (first,), {"axis": axis, "length": length, "stride": stride}
    if operation == "gather":
        indices = tuple(draw(st.lists(st.integers(0, extent - 1), min_size=1, max_size=4)))
        return operation, (first,), {"axis": axis, "indices": indices}
    if operation == "scatter":
        length = draw(st.integers(1, 3))
        indices = tuple(
            draw(st.lists(st.integers(0, length - 1), min_size=extent, max_size=extent))
        )
        return operation, (first,), {"axis": axis, "indices": indices, "length": length}
    raise AssertionError(f"no generator for {operation}")


@st.composite
def programs(draw, max_steps: int = 10) -> Program:
    """Random programs whose every value stays small (volume and rank bounded)."""
    drawn = tuple(draw(st.lists(parameter_shapes, min_size=1, max_size=3)))
    scratch = Tape(dtype=np.float64)
    pool = [scratch.parameter(Tensor.filled(shape, 0.5, np.float64)) for shape in drawn]
    steps = []
    for _ in range(draw(st.integers(2, max_steps))):
        step = _step(draw, pool)
        if step is None:
            continue
        operation, operands, attributes = step
        value = APPLY[operation](*(pool[i] for i in operands), **attributes)
        if value.shape.volume > MAX_VOLUME or value.shape.rank > MAX_RANK:
            continue
        pool.append(value)
        steps.append(step)
    extra = draw(st.one_of(st.none(), st.integers(0, len(pool) - 1)))
    return Program(drawn, tuple(steps), extra, draw(st.integers(0, 2**32 - 1)))
