"""Example: an expression a primitive's derivative test differentiates, declared beside it.

Each primitive brings at least one (`Primitive.examples`): how to draw float64 operand
values where its derivative is defined and smooth (away from corners, ties and the edges of
its domain), and how to record it over those values. The tests compare both routes'
gradients of it with central finite differences. This is data the library carries; the
library itself never runs it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from topos.indices import Indices
from topos.tensor import Tensor


class Tape(Protocol):
    """What a build records on: `topos.graph.Tape`, named here by what the builds use of
    it, since the graph sits above the primitives (it records them)."""

    def parameter(self, tensor: Tensor) -> Value: ...

    def input(self, default: Tensor | Indices) -> Value: ...

    def record(self, operation: str, operands: Sequence[Value], **attributes: Any) -> Value: ...


class Value(Protocol):
    """A value a build records: `topos.graph.Value`, by what the builds use of it."""

    @property
    def tape(self) -> Tape: ...

    @property
    def symbol(self) -> Hashable: ...


#: `draw(generator)`: the example's float64 operand values.
Draw = Callable[[np.random.Generator], list[np.ndarray]]
#: `build(tape, tensors)`: records the expression over the drawn values (as tensors) and
#: answers its output and the symbols (`Value.symbol`) to differentiate it with respect to.
Build = Callable[[Tape, list[Tensor]], tuple[Value, list[Hashable]]]


@dataclass(frozen=True, slots=True)
class Example:
    """One expression to differentiate: its `name` (unique among all examples), how to
    `draw` its operand values and how to `build` it on a tape."""

    name: str
    draw: Draw
    build: Build

    @property
    def seed(self) -> int:
        """A seed fixed by the example's name, for its values and its output weighting."""
        return zlib.crc32(self.name.encode())

    def arrays(self) -> list[np.ndarray]:
        """The example's float64 operand values."""
        return self.draw(np.random.default_rng(self.seed))


def on_parameters(express: Callable[..., Value]) -> Build:
    """A build that records every tensor as a parameter and applies `express` to them."""

    def build(tape: Tape, tensors: list[Tensor]) -> tuple[Value, list[Hashable]]:
        values = [tape.parameter(tensor) for tensor in tensors]
        return express(*values), [value.symbol for value in values]

    return build


def recorded(name: str, **attributes: Any) -> Build:
    """A build that records primitive `name` (with `attributes`) directly over every tensor
    as a parameter: for primitives no `Value` method records."""
    return on_parameters(lambda *operands: operands[0].tape.record(name, operands, **attributes))


def record(name: str, *operands: Value, **attributes: Any) -> Value:
    """Records primitive `name` over `operands` directly (for primitives no `Value`
    method records)."""
    return operands[0].tape.record(name, operands, **attributes)


#: Fixed token ids (and class indices) below 5: repeats included, so gradient rows add up.
TOKENS = np.array([[3, 0, 4, 0], [1, 3, 3, 2]])


def on_indices(
    express: Callable[..., Value], indices: np.ndarray = TOKENS, classes: int = 5
) -> Build:
    """A build that records fixed `indices` as an index input (fed by its default) and
    every tensor as a parameter, and applies `express(indices, *parameters)`."""

    def build(tape: Tape, tensors: list[Tensor]) -> tuple[Value, list[Hashable]]:
        index_input = tape.input(Indices.of(indices, classes))
        values = [tape.parameter(tensor) for tensor in tensors]
        return express(index_input, *values), [value.symbol for value in values]

    return build


def window(kernel_height=3, kernel_width=3, stride=1, padding=1, phases=1) -> dict[str, Any]:
    """The `window` attribute of the patch primitives (im2col, col2im, convolution, the
    Winograd transforms), as keyword arguments."""
    from topos.ops.patch_window import PatchWindow

    return {"window": PatchWindow(kernel_height, kernel_width, stride, padding, phases)}


# Drawing values away from where a derivative is undefined or rough ----------------------


def normal(*shapes: tuple[int, ...]) -> Draw:
    """Standard normal values."""
    return lambda rng: [rng.standard_normal(shape) for shape in shapes]


def positive(*shapes: tuple[int, ...]) -> Draw:
    """Values in [0.5, 2): safe for ln, sqrt and as divisors."""
    return lambda rng: [rng.uniform(0.5, 2.0, shape) for shape in shapes]


def away_from_zero(*shapes: tuple[int, ...]) -> Draw:
    """Values of either sign whose magnitude lies in [0.25, 1.5): no relu or heaviside corner."""
    return lambda rng: [
        rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 1.5, shape) for shape in shapes
    ]


def apart(shape: tuple[int, ...], other_shape: tuple[int, ...] | None = None) -> Draw:
    """Two operands that differ by at least 0.25 everywhere: no maximum tie."""

    def draw(rng: np.random.Generator) -> list[np.ndarray]:
        if other_shape is None:
            first = rng.standard_normal(shape)
            gap = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 1.0, shape)
            return [first, first + gap]
        scalar = rng.standard_normal(other_shape)
        gap = rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 1.0, shape)
        return [scalar + gap, scalar]

    return draw


def distinct(shape: tuple[int, ...]) -> Draw:
    """A shuffled ladder of values 0.25 apart: no two equal, so a maximum has no tie."""
    return lambda rng: [rng.permutation(int(np.prod(shape))).reshape(shape) * 0.25 - 2.0]


def both(first: Draw, second: Draw) -> Draw:
    """The values of `first` followed by those of `second`."""
    return lambda rng: first(rng) + second(rng)
