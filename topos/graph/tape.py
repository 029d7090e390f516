"""Tape: the append-only recording of a model, sealed once into a Network."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from topos.errors import GraphError, ShapeError
from topos.graph.adjoints import Adjoints
from topos.graph.node import Node
from topos.graph.source_location import user_location
from topos.graph.symbol import Symbol
from topos.graph.value import Value
from topos.indices import Indices
from topos.ops.primitive import REGISTRY
from topos.tensor import Shape, Tensor

_origins = itertools.count(1)


class Tape:
    """Records parameters, inputs, leaves and operations as a static graph, in order.

    Recording order is topological by construction. `differentiate` appends the
    chain rule as ordinary nodes; `into_network` seals the tape for good.
    """

    def __init__(self, dtype: Any = None) -> None:
        # Without a dtype, the first tensor recorded decides it (float32 or float64), so a
        # float64 model for finite differences needs no extra argument; mixing then fails.
        self._dtype = None if dtype is None else np.dtype(dtype)
        if self._dtype is not None and self._dtype not in (
            np.dtype(np.float32),
            np.dtype(np.float64),
        ):
            raise TypeError(f"a Tape records float32 or float64, not {self._dtype}")
        self.origin = next(_origins)
        self.nodes: list[Node] = []
        self.payloads: dict[int, Tensor | Indices] = {}
        # Parameter names given at recording, each naming one parameter.
        self.names: dict[str, int] = {}
        # State carried across steps: each state input's name, and the node that holds
        # its value for the next step (a batch norm's running statistics).
        self.state_names: dict[str, int] = {}
        self.state_updates: dict[int, int] = {}
        self.sealed = False

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def dtype(self) -> np.dtype:
        """The dtype every payload on this tape has: given, or set by the first tensor
        recorded (float32 until then)."""
        return self._dtype if self._dtype is not None else np.dtype(np.float32)

    def shape_of(self, index: int) -> Shape:
        """The shape of node `index`."""
        return self.nodes[index].shape

    def _check_open(self, what: str) -> None:
        if self.sealed:
            raise GraphError(f"{what}: the tape was sealed into a network and records no more")

    def _source(self, kind: str, tensor: Tensor, attributes: dict | None = None) -> Value:
        self._check_open(kind)
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{kind}: expected a Tensor, got {type(tensor).__name__}")
        if self._dtype is None:
            self._dtype = tensor.dtype
        if tensor.dtype != self._dtype:
            raise TypeError(
                f"{kind}: the tensor is {tensor.dtype} but the tape records {self.dtype}"
            )
        index = len(self.nodes)
        self.nodes.append(Node(kind, None, (), tensor.shape, attributes or {}, user_location()))
        self.payloads[index] = tensor
        return Value(self, index)

    def parameter(self, tensor: Tensor, name: str | None = None) -> Value:
        """Records a trainable parameter whose initial payload is `tensor`, under `name`
        when given (`blocks.0.mlp.expand.weight`), which no other parameter may have."""
        if name is None:
            return self._source("parameter", tensor)
        if not isinstance(name, str) or not name:
            raise ValueError(f"parameter: a name is a non-empty string, not {name!r}")
        if name in self.names:
            raise ValueError(f"parameter: the name {name!r} is taken by %{self.names[name]}")
        value = self._source("parameter", tensor, {"name": name})
        self.names[name] = value.index
        return value

    def input(self, default: Tensor | Indices) -> Value:
        """Records an input fed per run; `default` gives its shape and its unfed payload.

        An `Indices` default makes an *index input*: integers below `default.classes`
        (token ids, class labels) that only index operations (`embedding`, class-index
        `cross_entropy`) read."""
        if isinstance(default, Indices):
            self._check_open("input")
            index = len(self.nodes)
            attributes = {"classes": default.classes}
            self.nodes.append(Node("input", None, (), default.shape, attributes, user_location()))
            self.payloads[index] = default
            return Value(self, index)
        return self._source("input", default)

    def state(self, initial: Tensor, name: str | None = None) -> Value:
        """Records state the training carries across steps (a batch norm's running
        mean): an input whose payload at the first step is `initial`, and at every later
        step what the node named by `update_state` held at the step before. Named `name`
        (`bn1.running_mean`), or `state%<index>` without one; no two states share a name."""
        index = len(self.nodes)
        name = f"state%{index}" if name is None else name
        if not isinstance(name, str) or not name:
            raise ValueError(f"state: a name is a non-empty string, not {name!r}")
        if name in self.state_names:
            raise ValueError(f"state: the name {name!r} is taken by %{self.state_names[name]}")
        value = self._source("input", initial, {"state": name})
        self.state_names[name] = value.index
        return value

    def update_state(self, state: Value, value: Value) -> None:
        """Makes `value` the payload `state` (a `state` input of this tape) takes at the
        next step. Every route computes it in its forward pass, with the same kernels; no
        gradient flows through it."""
        self._check_open("update_state")
        state_index = self._index(state, "update_state")
        value_index = self._index(value, "update_state")
        node = self.nodes[state_index]
        if "state" not in node.attributes:
            raise GraphError(f"update_state: %{state_index} is not a state (tape.state(...))")
        if state_index in self.state_updates:
            raise GraphError(f"update_state: state {node.attributes['state']!r} has an update")
        if self.nodes[value_index].shape != node.shape:
            raise ShapeError(
                f"update_state: state {node.attributes['state']!r} is {node.shape}, its "
                f"update {self.nodes[value_index].shape}"
            )
        self.state_updates[state_index] = value_index

    def truncate(self, length: int) -> None:
        """Forgets every node from `length` on (what a failed `differentiate` appended);
        sources among them are never parameters, which differentiation does not record."""
        self._check_open("truncate")
        for index in range(length, len(self.nodes)):
            self.payloads.pop(index, None)
        del self.nodes[length:]

    def named_parameters(self) -> dict[str, Symbol]:
        """Every named parameter's symbol by name, in recording order."""
        return {name: Symbol(self.origin, index) for name, index in self.names.items()}

    def holds_indices(self, reference: Symbol | Value) -> bool:
        """Whether a node is an index input."""
        return self.nodes[self._index(reference, "holds_indices")].holds_indices

    def leaf(self, tensor: Tensor) -> Value:
        """Records a constant."""
        return self._source("leaf", tensor)

    def constant(self, value: float) -> Value:
        """Records a rank-0 constant leaf holding `value` (how Python numbers enter)."""
        return self.leaf(Tensor.filled((), value, dtype=self.dtype))

    def value(self, symbol: Symbol | Value) -> Value:
        """The Value of a symbol of this tape."""
        return Value(self, self._index(symbol, "value"))

    def _index(self, reference: Symbol | Value, what: str) -> int:
        if isinstance(reference, Value):
            if reference.tape is not self:
                raise GraphError(f"{what}: {reference!r} was recorded on another tape")
            return reference.index
        if isinstance(reference, Symbol):
            if reference.origin != self.origin or not 0 <= reference.index < len(self.nodes):
                raise GraphError(f"{what}: {reference!r} does not belong to this tape")
            return reference.index
        raise TypeError(f"{what}: expected a Symbol or Value, got {type(reference).__name__}")

    def record(self, operation: str, operands: Sequence[Value], **attributes: Any) -> Value:
        """Appends primitive `operation` applied to `operands`; its shape rule runs now,
        so a mismatch raises ShapeError at the expression that caused it."""
        self._check_open(operation)
        primitive = REGISTRY[operation]
        inputs = []
        for operand in operands:
            if not isinstance(operand, Value):
                raise TypeError(f"{operation}: operand {operand!r} is not a Value")
            if operand.tape is not self:
                raise GraphError(f"{operation}: an operand was recorded on another tape")
            inputs.append(operand.index)
        if len(inputs) != primitive.arity:
            raise TypeError(f"{operation} takes {primitive.arity} operands, not {len(inputs)}")
        for position, input_index in enumerate(inputs):
            # Integers and floats never mix: an index input feeds index operands only.
            wanted = position in primitive.index_operands
            if self.nodes[input_index].holds_indices != wanted:
                kind = "an index input" if wanted else "a float value, not an index input"
                raise TypeError(f"{operation}: operand {position} (%{input_index}) must be {kind}")
        shape = primitive.infer(*(self.nodes[i].shape for i in inputs), **attributes)
        index = len(self.nodes)
        node = Node(operation, primitive, tuple(inputs), shape, attributes, user_location())
        self.nodes.append(node)
        return Value(self, index)

    def differentiate(self, target: Symbol | Value, wrt: Iterable[Symbol | Value]) -> Adjoints:
        """Appends the chain rule of `target` with respect to each of `wrt` as ordinary
        nodes, and returns their gradient symbols as Adjoints."""
        self._check_open("differentiate")
        target_index = self._index(target, "differentiate")
        wrt_indices = [self._index(reference, "differentiate") for reference in wrt]
        if self.nodes[target_index].shape.rank != 0:
            raise ShapeError(
                f"differentiate: target %{target_index} has shape "
                f"{self.nodes[target_index].shape}; only a rank-0 (scalar) target has a gradient"
            )
        # autodiff sits above graph (its algebras record onto tapes), hence the late import.
        from topos.autodiff.recorded_chain_rule import record_chain_rule

        return record_chain_rule(self, target_index, wrt_indices)

    def into_network(self):
        """Seals the tape into an immutable Network; the tape refuses further recording."""
        from topos.graph.network import Network

        self._check_open("into_network")
        self.sealed = True
        return Network(
            self.origin,
            self.dtype,
            tuple(self.nodes),
            dict(self.payloads),
            dict(self.names),
            dict(self.state_updates),
        )
