"""Random programs for property tests: a few parameters of random shapes and a few
constant leaves, a random sequence of primitives over them (each step's operands
drawn from everything recorded so far, so values and leaves get reused), and a
scalar loss at the end.

The generator leans on the places memory planning can go wrong: parameters that
pass through view chains (reshapes that add or drop extent-1 axes, permutes over
them, narrows, pads, folds) before anything else uses them; Python numbers on
either side of an operator; 2-D and batched products; and, optionally, a second
order term (a penalty on the recorded gradients, differentiated again).

A program is plain data, replayed onto any tape, so the same graph can be recorded
in float32 and float64 and by both routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from topos import Tape, Tensor, Value, einsum, max_pool
from topos.ops.patch_window import PatchWindow

MAX_VOLUME = 81
MAX_RANK = 4

#: Python numbers that join the graph as rank-0 leaves.
NUMBERS = (-1.5, 0.5, 2.0, 3.0)

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
    "heaviside": lambda a: a.heaviside(),
    "abs": lambda a: a.abs(),
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
    "full": lambda a, shape: a.full(shape),
    "expand": lambda a, shape: a.expand(shape),
    "repeat": lambda a, sizes: a.repeat(*sizes),
    "flatten": lambda a, start: a.flatten(start),
    "unsqueeze_squeeze": lambda a, axis: a.unsqueeze(axis).squeeze(),
    "sin": lambda a: a.sin(),
    "cos": lambda a: a.cos(),
    "erf": lambda a: a.erf(),
    "softplus": lambda a: a.softplus(),
    "leaky_relu": lambda a: a.leaky_relu(0.1),
    "square": lambda a: a.square(),
    "clamp": lambda a, low, high: a.clamp(low, high),
    "tensor_power": lambda a, b: (a * a + 1.0) ** b.tanh(),
    "cumsum": lambda a, axis: a.cumsum(axis),
    "amax": lambda a, axis: a.amax(axis),
    "max_dim": lambda a, axis: a.max(axis).values,
    "amin_keepdim": lambda a, axis: a.amin(axis, keepdim=True),
    "argmax": lambda a, axis: a.argmax(axis),
    "var": lambda a, axis, unbiased: a.var(axis, unbiased=unbiased),
    "einsum": lambda a, b, equation: einsum(equation, a, b),
    "matmul_vector": lambda a, b: a.matmul(b),
    "logsumexp": lambda a, axis: a.logsumexp(axis),
    "pad": lambda a, widths: a.pad(widths),
    "narrow": lambda a, axis, start, length: a.narrow(axis, start, length),
    "unfold": lambda a, axis, size, stride: a.unfold(axis, size, stride),
    "fold": lambda a, axis, length, stride: a.fold(axis, length, stride),
    "gather": lambda a, axis, indices: a.gather(axis, indices),
    "scatter": lambda a, axis, indices, length: a.tape.record(
        "scatter", (a,), axis=axis, indices=indices, length=length
    ),
    "number_left": lambda a, operator, number: _number_left(a, operator, number),
    "number_right": lambda a, operator, number: _number_right(a, operator, number),
    "unsqueeze_permute": lambda a, shape, axes: a.reshape(shape).permute(*axes),
    "batched_gram": lambda a: a @ a.T,
    "matmul_leaf": lambda a, columns, seed: (
        a @ _leaf(a.tape, (*tuple(a.shape)[:-2], a.shape[-1], columns), seed)
    ),
}


def _number_left(a: Value, operator: str, number: float) -> Value:
    if operator == "+":
        return number + a
    if operator == "-":
        return number - a
    if operator == "*":
        return number * a
    return number / (a * a + 1.0)


def _number_right(a: Value, operator: str, number: float) -> Value:
    if operator == "+":
        return a + number
    if operator == "-":
        return a - number
    if operator == "*":
        return a * number
    return a / number


def _leaf(tape: Tape, shape: tuple[int, ...], seed: int) -> Value:
    """A constant leaf of `shape` with values fixed by `seed`."""
    values = np.random.default_rng(seed).standard_normal(shape)
    return tape.leaf(Tensor(shape, values, tape.dtype))


BINARY_ELEMENTWISE = ("add", "sub", "mul", "maximum", "div", "tensor_power")


@dataclass
class Program:
    """Parameter shapes, leaf shapes, recorded steps `(operation, operand positions,
    attributes)`, the positions of the values whose weighted sums make the loss (in
    the order they are recorded; None stands for the last value), a seed for all
    values, and whether the loss adds a penalty on its own recorded gradients."""

    shapes: tuple[tuple[int, ...], ...]
    steps: tuple[tuple[str, tuple[int, ...], dict], ...]
    terms: tuple[int | None, ...]
    seed: int
    leaves: tuple[tuple[int, ...], ...] = ()
    second_order: bool = False

    def arrays(self) -> list[np.ndarray]:
        """The float64 parameter values."""
        rng = np.random.default_rng(self.seed)
        return [rng.standard_normal(shape) for shape in self.shapes]

    def replay(self, values: list[Value]) -> list[Value]:
        """Records the leaves and steps after `values` (the parameters) and returns every
        value: parameters, leaves, then one per step."""
        pool = list(values)
        if values:
            tape = values[0].tape
            for position, shape in enumerate(self.leaves):
                pool.append(_leaf(tape, shape, self.seed + 7 + position))
        for operation, operands, attributes in self.steps:
            pool.append(APPLY[operation](*(pool[i] for i in operands), **attributes))
        return pool

    def build(self, tape: Tape, tensors: list[Tensor]):
        """What `tests.support.routes` records: the loss-shaped output and the parameters."""
        parameters = [tape.parameter(tensor) for tensor in tensors]
        pool = self.replay(parameters)
        rng = np.random.default_rng(self.seed + 1)
        output = None
        for position in self.terms:
            value = pool[-1 if position is None else position]
            weights = tape.leaf(
                Tensor(value.shape, rng.standard_normal(value.shape.extents), tape.dtype)
            )
            term = (value * weights).sum()
            output = term if output is None else output + term
        symbols = [parameter.symbol for parameter in parameters]
        if self.second_order:
            # A penalty on the recorded gradients: the loss is differentiated twice.
            adjoints = tape.differentiate(output, symbols)
            for _, gradient in adjoints:
                value = tape.value(gradient)
                output = output + (value * value).sum() * 0.5
        return output, symbols


def _step(
    draw, pool: list[Value], operation: str | None = None, first: int | None = None
) -> tuple[str, tuple[int, ...], dict] | None:
    """Draws one applicable operation over the shapes in `pool` (or applies `operation`
    to `first`, when given), or None."""
    if operation is None:
        operation = draw(st.sampled_from(sorted(APPLY)))
    positions = range(len(pool))
    shape_of = [value.shape for value in pool]
    if first is None:
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
    if operation in (
        "affine",
        "neg",
        "tanh",
        "relu",
        "heaviside",
        "abs",
        "exp",
        "ln",
        "sqrt",
        "sum",
        "sin",
        "cos",
        "erf",
        "softplus",
        "leaky_relu",
        "square",
    ):
        return operation, (first,), {}
    if operation in ("number_left", "number_right"):
        attributes = {
            "operator": draw(st.sampled_from("+-*/")),
            "number": draw(st.sampled_from(NUMBERS)),
        }
        return operation, (first,), attributes
    if operation == "unsqueeze_permute":
        return operation, (first,), _unsqueeze_permute(draw, tuple(shape))
    if operation == "batched_gram":
        return (operation, (first,), {}) if rank >= 2 else None
    if operation == "matmul_leaf":
        if rank < 2:
            return None
        return (
            operation,
            (first,),
            {"columns": draw(st.integers(1, 3)), "seed": draw(st.integers(0, 99))},
        )
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
        stride = draw(st.integers(1, 2))
        window = PatchWindow(kernel_height, kernel_width, stride, padding)
        return operation, (first,), {"window": window}
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
    if operation == "full":
        return (operation, (first,), {"shape": draw(shapes)}) if rank == 0 else None
    if operation == "expand":
        lead = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
        kept = tuple(
            draw(st.sampled_from((-1, 1, 2, 3)))
            if extent == 1
            else draw(st.sampled_from((-1, extent)))
            for extent in shape
        )
        return operation, (first,), {"shape": lead + kept}
    if operation == "repeat":
        sizes = tuple(draw(st.lists(st.integers(1, 2), min_size=rank, max_size=rank + 1)))
        return operation, (first,), {"sizes": sizes}
    if operation == "clamp":
        low = draw(st.sampled_from((None, -0.5)))
        return (
            operation,
            (first,),
            {"low": low, "high": 0.75 if low is None else draw(st.sampled_from((None, 0.75)))},
        )
    if operation == "einsum":
        equation = {2: "ij,ik->jk", 3: "bij,bik->bjk"}.get(rank)
        partners = [
            i
            for i in positions
            if equation
            and shape_of[i].rank == rank
            and tuple(shape_of[i])[:-1] == tuple(shape)[:-1]
        ]
        if not partners:
            return None
        return operation, (first, draw(st.sampled_from(partners))), {"equation": equation}
    if operation == "matmul_vector":
        partners = [i for i in positions if rank >= 2 and tuple(shape_of[i]) == (shape[-1],)]
        if not partners:
            return None
        return operation, (first, draw(st.sampled_from(partners))), {}
    if operation == "unsqueeze_squeeze":
        return operation, (first,), {"axis": draw(st.integers(-rank - 1, rank))}
    if operation == "broadcast_along":
        axis = draw(st.integers(0, rank))
        return operation, (first,), {"axis": axis, "size": draw(st.integers(1, 3))}
    if rank == 0:
        return None
    axis = draw(st.integers(0, rank - 1))
    extent = shape[axis]
    if operation in (
        "sum_along",
        "logsumexp",
        "cumsum",
        "amax",
        "max_dim",
        "amin_keepdim",
        "argmax",
    ):
        return operation, (first,), {"axis": axis}
    if operation == "var":
        return operation, (first,), {"axis": axis, "unbiased": extent > 1}
    if operation == "flatten":
        return operation, (first,), {"start": axis}
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


def _unsqueeze_permute(draw, extents: tuple[int, ...]) -> dict:
    """Extent-1 axes inserted at random places, then a random order of all axes: the
    views whose strides NumPy may ignore."""
    grown = list(extents)
    for _ in range(draw(st.integers(0, min(2, MAX_RANK - len(extents))))):
        grown.insert(draw(st.integers(0, len(grown))), 1)
    axes = tuple(draw(st.permutations(range(len(grown)))))
    return {"shape": tuple(grown), "axes": axes}


#: What a parameter may pass through before anything else reads it.
#: Extent-1 views come up most often: they are what NumPy may alias unforeseen.
PROLOGUE = (
    *("unsqueeze_permute",) * 3,
    "narrow",
    "pad",
    "fold",
    "reshape",
    "permute",
    "number_left",
)


def _record_step(pool: list[Value], steps: list, step) -> None:
    """Records `step` onto the scratch pool when its value stays small."""
    if step is None:
        return
    operation, operands, attributes = step
    value = APPLY[operation](*(pool[i] for i in operands), **attributes)
    if value.shape.volume > MAX_VOLUME or value.shape.rank > MAX_RANK:
        return
    pool.append(value)
    steps.append(step)


@st.composite
def programs(
    draw, max_steps: int = 10, leaves: bool = False, second_order: bool = False
) -> Program:
    """Random programs whose every value stays small (volume and rank bounded). With
    `leaves`, constant leaves join the pool and parameters may pass through view chains
    first; with `second_order`, some programs penalise their own recorded gradients."""
    # With leaves, at least two parameters: one parameter's gradient is finished while
    # the sweep still has the other's calls to run.
    drawn = tuple(draw(st.lists(parameter_shapes, min_size=2 if leaves else 1, max_size=3)))
    leaf_shapes = tuple(draw(st.lists(shapes, max_size=2))) if leaves else ()
    scratch = Tape(dtype=np.float64)
    pool = [scratch.parameter(Tensor.filled(shape, 0.5, np.float64)) for shape in drawn]
    pool += [scratch.leaf(Tensor.filled(shape, 0.5, np.float64)) for shape in leaf_shapes]
    steps: list = []
    # Each parameter's view chain ends in a value that joins the loss on its own, so
    # the sweep finishes one parameter's gradient while others are still to come.
    chain_ends: list[int] = []
    if leaves:
        for position in range(len(drawn)):
            for _ in range(draw(st.integers(1, 2))):
                operation = draw(st.sampled_from(PROLOGUE))
                before = len(pool)
                _record_step(pool, steps, _step(draw, pool, operation, position))
                if len(pool) > before:
                    # The chain goes on from what the step recorded.
                    position = len(pool) - 1
            chain_ends.append(position)
    for _ in range(draw(st.integers(2, max_steps))):
        _record_step(pool, steps, _step(draw, pool))
    extras = draw(st.lists(st.integers(0, len(pool) - 1), max_size=2))
    terms = draw(st.permutations([None, *extras, *chain_ends]))
    order = draw(st.booleans()) if second_order else False
    seed = draw(st.integers(0, 2**32 - 1))
    return Program(drawn, tuple(steps), tuple(terms), seed, leaf_shapes, order)
