"""GRUCell and GRU: PyTorch's gated recurrent unit, a layer unrolled over a fixed length."""

from __future__ import annotations

from typing import Any

from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.concat import stack
from topos.nn.module import Module
from topos.nn.recurrent import (
    RecurrentCell,
    check_layer_arguments,
    sequence_of,
    time_major_steps,
)


class GRUCell(RecurrentCell):
    """`torch.nn.GRUCell(input_size, hidden_size, bias)`: gates r, z, n in PyTorch's
    order; `express(x, h)` records `h' = (1 - z) * n + z * h` with
    `n = tanh(W_in x + b_in + r * (W_hn h + b_hn))`."""

    gates = 3

    def express(self, value: Value, hidden: Value | None = None) -> Value:
        """The next state from `value [N, I]` and `hidden [N, H]` (zeros when None)."""
        return self.step(self.input_projection(value), hidden)

    def step(self, projected: Value, hidden: Value | None) -> Value:
        """The next state from an input already projected (`input_projection`)."""
        if hidden is None:
            hidden = self.zeros(projected.tape, projected.shape[0])
        recurrent = self.hidden_projection(hidden)
        reset = (self.gate(projected, 0) + self.gate(recurrent, 0)).sigmoid()
        update = (self.gate(projected, 1) + self.gate(recurrent, 1)).sigmoid()
        candidate = (self.gate(projected, 2) + reset * self.gate(recurrent, 2)).tanh()
        return (1.0 - update) * candidate + update * hidden


class GRU(Module):
    """`torch.nn.GRU(input_size, hidden_size, num_layers, bias, batch_first)` unrolled
    over the input's length: layer `k`'s parameters are named `<name>.weight_ih_l<k>`...
    as PyTorch's, drawn from `seed + k`. `express(x, h0)` gives `(output, h_n)`: every
    position's last-layer state `[T, N, H]` (`[N, T, H]` with `batch_first`) and each
    layer's last state `[num_layers, N, H]`."""

    def __init__(
        self,
        tape: Tape,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        seed: int = 0,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        check_layer_arguments("GRU", num_layers, dropout, bidirectional)
        self.batch_first = batch_first
        self.input_size, self.hidden_size = input_size, hidden_size
        self.cells = [
            GRUCell(
                tape,
                input_size if layer == 0 else hidden_size,
                hidden_size,
                bias,
                seed + layer,
                name,
                f"_l{layer}",
                dtype,
            )
            for layer in range(num_layers)
        ]

    def express(self, value: Value, initial: Value | None = None) -> tuple[Value, Value]:
        """`(output, h_n)` of the sequence `value`, from `initial [num_layers, N, H]`
        (zeros when None)."""
        steps = time_major_steps("GRU", value, self.batch_first, self.input_size)
        finals = []
        for layer, cell in enumerate(self.cells):
            rows = steps[0].shape[0]
            hidden = None if initial is None else initial.narrow(0, layer, 1).reshape(rows, -1)
            # Every position's input part in one product, then cut by position.
            projected = cell.input_projection(stack(steps, 0).reshape(-1, steps[0].shape[1]))
            width = projected.shape[1]
            states = []
            for position in range(len(steps)):
                part = projected.narrow(0, position * rows, rows).reshape(rows, width)
                hidden = cell.step(part, hidden)
                states.append(hidden)
            steps = states
            finals.append(hidden)
        return sequence_of(steps, self.batch_first), stack(finals, 0)

    def parameters(self) -> list[Symbol]:
        """Each layer's, in order."""
        return [symbol for cell in self.cells for symbol in cell.parameters()]
