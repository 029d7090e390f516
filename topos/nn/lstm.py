"""LSTMCell and LSTM: PyTorch's long short-term memory, a layer unrolled over a fixed
length."""

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


class LSTMCell(RecurrentCell):
    """`torch.nn.LSTMCell(input_size, hidden_size, bias)`: gates i, f, g, o in PyTorch's
    order; `express(x, (h, c))` records `c' = f * c + i * g`, `h' = o * tanh(c')`."""

    gates = 4

    def express(
        self, value: Value, state: tuple[Value, Value] | None = None
    ) -> tuple[Value, Value]:
        """`(h', c')` from `value [N, I]` and `(h, c)`, each `[N, H]` (zeros when None)."""
        return self.step(self.input_projection(value), state)

    def step(self, projected: Value, state: tuple[Value, Value] | None) -> tuple[Value, Value]:
        """`(h', c')` from an input already projected (`input_projection`)."""
        if state is None:
            rows = projected.shape[0]
            state = (self.zeros(projected.tape, rows), self.zeros(projected.tape, rows))
        hidden, memory = state
        gates = projected + self.hidden_projection(hidden)
        entry = self.gate(gates, 0).sigmoid()
        forget = self.gate(gates, 1).sigmoid()
        candidate = self.gate(gates, 2).tanh()
        exit_gate = self.gate(gates, 3).sigmoid()
        memory = forget * memory + entry * candidate
        return exit_gate * memory.tanh(), memory


class LSTM(Module):
    """`torch.nn.LSTM(input_size, hidden_size, num_layers, bias, batch_first)` unrolled
    over the input's length (parameters named and drawn as `GRU`'s). `express(x, (h0,
    c0))` gives `(output, (h_n, c_n))`, shaped as PyTorch's."""

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
        check_layer_arguments("LSTM", num_layers, dropout, bidirectional)
        self.batch_first = batch_first
        self.input_size, self.hidden_size = input_size, hidden_size
        self.cells = [
            LSTMCell(
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

    def express(
        self, value: Value, initial: tuple[Value, Value] | None = None
    ) -> tuple[Value, tuple[Value, Value]]:
        """`(output, (h_n, c_n))` of the sequence `value`, from `(h0, c0)`, each
        `[num_layers, N, H]` (zeros when None)."""
        steps = time_major_steps("LSTM", value, self.batch_first, self.input_size)
        hiddens, memories = [], []
        rows = steps[0].shape[0]
        for layer, cell in enumerate(self.cells):
            state = None
            if initial is not None:
                state = tuple(
                    part.narrow(0, layer, 1).reshape(rows, self.hidden_size) for part in initial
                )
            projected = cell.input_projection(stack(steps, 0).reshape(-1, steps[0].shape[1]))
            width = projected.shape[1]
            outputs = []
            for position in range(len(steps)):
                part = projected.narrow(0, position * rows, rows).reshape(rows, width)
                state = cell.step(part, state)
                outputs.append(state[0])
            steps = outputs
            hiddens.append(state[0])
            memories.append(state[1])
        return sequence_of(steps, self.batch_first), (stack(hiddens, 0), stack(memories, 0))

    def parameters(self) -> list[Symbol]:
        """Each layer's, in order."""
        return [symbol for cell in self.cells for symbol in cell.parameters()]
