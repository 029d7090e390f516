"""Network: the sealed, immutable spec — nodes, shapes, parameter initials, input defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from topos.errors import GraphError, ShapeError
from topos.graph.node import Node
from topos.graph.symbol import Symbol
from topos.graph.value import Value
from topos.indices import Indices
from topos.tensor import Shape, Tensor


class Network:
    """What a tape becomes when sealed; plans are lowered from it, parameters start from it."""

    def __init__(
        self,
        origin: int,
        dtype: np.dtype,
        nodes: tuple[Node, ...],
        payloads: dict[int, Tensor | Indices],
        names: dict[str, int] | None = None,
        state_updates: dict[int, int] | None = None,
    ) -> None:
        self.origin = origin
        self.dtype = dtype
        self.nodes = nodes
        self.payloads = payloads
        # Parameter names (name -> node index), in recording order.
        self.names = dict(sorted((names or {}).items(), key=lambda item: item[1]))
        # State carried across steps: state input index -> the node of its next value.
        self.state_updates = dict(state_updates or {})
        self.parameter_indices = tuple(
            index for index, node in enumerate(nodes) if node.operation == "parameter"
        )
        self.input_indices = tuple(
            index for index, node in enumerate(nodes) if node.operation == "input"
        )

    def __len__(self) -> int:
        return len(self.nodes)

    def index(self, reference: Symbol | Value, what: str = "network") -> int:
        """The node index a symbol names, refusing symbols of another network."""
        if isinstance(reference, Value):
            reference = reference.symbol
        if not isinstance(reference, Symbol):
            raise TypeError(f"{what}: expected a Symbol, got {type(reference).__name__}")
        if reference.origin != self.origin or not 0 <= reference.index < len(self.nodes):
            raise GraphError(f"{what}: {reference!r} belongs to another network")
        return reference.index

    def symbol(self, index: int) -> Symbol:
        """The symbol of node `index`."""
        return Symbol(self.origin, index)

    def shape(self, reference: Symbol) -> Shape:
        """The shape of the node a symbol names."""
        return self.nodes[self.index(reference, "shape")].shape

    def parameter_symbols(self) -> list[Symbol]:
        """Every parameter, in recording order."""
        return [self.symbol(index) for index in self.parameter_indices]

    def input_symbols(self) -> list[Symbol]:
        """Every input, in recording order."""
        return [self.symbol(index) for index in self.input_indices]

    def state_symbols(self) -> dict[str, Symbol]:
        """Every state input (`Tape.state`) by name, in recording order: what a run of
        this network is fed to continue a training's state (`Training.state`)."""
        return {
            self.nodes[index].attributes["state"]: self.symbol(index)
            for index in self.input_indices
            if "state" in self.nodes[index].attributes
        }

    def state_update_symbols(self) -> dict[Symbol, Symbol]:
        """Each updated state input's symbol and that of the node holding its next value."""
        return {self.symbol(state): self.symbol(new) for state, new in self.state_updates.items()}

    def parameter_named(self, name: str) -> Symbol:
        """The parameter recorded under `name`."""
        try:
            return self.symbol(self.names[name])
        except KeyError:
            raise GraphError(f"network: no parameter is named {name!r}") from None

    def name_of(self, symbol: Symbol) -> str | None:
        """The name a parameter was recorded under, or None."""
        return self.nodes[self.index(symbol, "name_of")].attributes.get("name")

    def parameters(self, named: Mapping[str, Tensor] | None = None):
        """A fresh Parameters holding every parameter's initial payload, except those
        `named` gives by name (a trained model's payloads moved onto another recording
        of it, such as a probe for fewer rows)."""
        from topos.graph.parameters import Parameters

        payloads = {index: self.payloads[index] for index in self.parameter_indices}
        for name, tensor in (named or {}).items():
            index = self.index(self.parameter_named(name), "parameters")
            if not isinstance(tensor, Tensor) or tensor.shape != payloads[index].shape:
                raise ShapeError(
                    f"network.parameters: {name!r} is {payloads[index].shape}, "
                    f"not {getattr(tensor, 'shape', type(tensor).__name__)}"
                )
            payloads[index] = tensor
        return Parameters(self, payloads)

    def entry(self, roots: Iterable[Symbol | Value]):
        """A lowering request for the plan that makes `roots` readable."""
        from topos.engine.entry import Entry

        indices = tuple(self.index(root, "entry") for root in roots)
        if not indices:
            raise GraphError("entry: at least one root is needed")
        return Entry(self, indices)
