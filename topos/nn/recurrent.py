"""The recurrent layers' common part: PyTorch-shaped gate weights drawn as PyTorch draws
them (uniform within 1/sqrt(hidden)), and the unrolling of a cell over a fixed length."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn import init
from topos.nn.bias_rows import BiasRows
from topos.nn.concat import stack
from topos.nn.module import Module
from topos.tensor import Tensor


class RecurrentCell(Module):
    """A cell of `gates` gates over `input_size` inputs and `hidden_size` state:
    `weight_ih [gates * H, I]`, `weight_hh [gates * H, H]` and, with `bias`, `bias_ih`
    and `bias_hh [gates * H]`, PyTorch's shapes and names (`<name>.weight_ih`...), drawn
    from `init.uniform(seed, 1 / sqrt(hidden_size))` in that order."""

    gates = 1

    def __init__(
        self,
        tape: Tape,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        seed: int = 0,
        name: str | None = None,
        suffix: str = "",
        dtype: Any = None,
    ) -> None:
        kind = type(self).__name__
        if input_size < 1 or hidden_size < 1:
            raise ValueError(
                f"{kind}: input_size {input_size} and hidden_size {hidden_size} must be positive"
            )
        dtype = tape.dtype if dtype is None else np.dtype(dtype)
        self.name, self.input_size, self.hidden_size = name, input_size, hidden_size
        draw = init.uniform(seed, 1.0 / math.sqrt(hidden_size))
        rows = self.gates * hidden_size

        def parameter(role: str, shape: list[int]) -> Value:
            named = None if name is None else f"{name}.{role}{suffix}"
            return tape.parameter(draw(shape).astype(dtype), named)

        self._weight_ih = parameter("weight_ih", [rows, input_size])
        self._weight_hh = parameter("weight_hh", [rows, hidden_size])
        self._bias_ih = parameter("bias_ih", [rows]) if bias else None
        self._bias_hh = parameter("bias_hh", [rows]) if bias else None
        # Transposed once a recording, not once a position.
        self._weight_ih_t = self._weight_ih.transpose()
        self._weight_hh_t = self._weight_hh.transpose()
        # The biases broadcast down the batch once a recording too (see BiasRows): the
        # hidden one is added at every position.
        self._bias_ih_rows = None if self._bias_ih is None else BiasRows(self._bias_ih)
        self._bias_hh_rows = None if self._bias_hh is None else BiasRows(self._bias_hh)

    def input_projection(self, value: Value) -> Value:
        """`value [N, I] @ weight_ih^T + bias_ih`: every gate's input part, `[N, gates*H]`."""
        if value.shape.rank != 2 or value.shape[1] != self.input_size:
            raise ShapeError(
                f"{type(self).__name__}({self.input_size}, {self.hidden_size}): input "
                f"{value.shape} must be [N, {self.input_size}]"
            )
        return _affine(value, self._weight_ih_t, self._bias_ih_rows)

    def hidden_projection(self, hidden: Value) -> Value:
        """`hidden [N, H] @ weight_hh^T + bias_hh`, `[N, gates*H]`."""
        if hidden.shape.rank != 2 or hidden.shape[1] != self.hidden_size:
            raise ShapeError(
                f"{type(self).__name__}({self.input_size}, {self.hidden_size}): state "
                f"{hidden.shape} must be [N, {self.hidden_size}]"
            )
        return _affine(hidden, self._weight_hh_t, self._bias_hh_rows)

    def gate(self, projection: Value, index: int) -> Value:
        """Gate `index`'s columns of a projection, `[N, H]`."""
        return projection.narrow(1, index * self.hidden_size, self.hidden_size)

    def zeros(self, tape: Tape, rows: int) -> Value:
        """A zero state `[rows, H]`, PyTorch's default."""
        return tape.leaf(Tensor.filled([rows, self.hidden_size], 0.0, dtype=tape.dtype))

    def parameters(self) -> list[Symbol]:
        """weight_ih, weight_hh, then bias_ih and bias_hh (when there are biases)."""
        values = [self._weight_ih, self._weight_hh, self._bias_ih, self._bias_hh]
        return [value.symbol for value in values if value is not None]


def _affine(value: Value, weight_t: Value, bias: BiasRows | None) -> Value:
    product = value @ weight_t
    return product if bias is None else product + bias.down(value.shape[0])


def check_layer_arguments(kind: str, num_layers: int, dropout: float, bidirectional: bool):
    """Refuses what the recurrent layers do not do yet, by name."""
    if num_layers < 1:
        raise ValueError(f"{kind}: num_layers {num_layers} must be positive")
    if dropout:
        raise ValueError(f"{kind}: dropout between layers is not supported yet; give 0")
    if bidirectional:
        raise ValueError(f"{kind}: bidirectional=True is not supported yet")


def time_major_steps(kind: str, value: Value, batch_first: bool, features: int) -> list[Value]:
    """The positions of a sequence, each `[N, features]`: `value` is `[T, N, features]`
    (or `[N, T, features]` with `batch_first`)."""
    if value.shape.rank != 3 or value.shape[2] != features:
        order = "[N, T, I]" if batch_first else "[T, N, I]"
        raise ShapeError(f"{kind}: input {value.shape} must be {order} with I = {features}")
    axis = 1 if batch_first else 0
    rows = value.shape[0] if batch_first else value.shape[1]
    return [
        value.narrow(axis, position, 1).reshape(rows, features)
        for position in range(value.shape[axis])
    ]


def sequence_of(states: list[Value], batch_first: bool) -> Value:
    """The states of every position as one sequence, `[T, N, H]` (or `[N, T, H]`)."""
    return stack(states, 1 if batch_first else 0)
