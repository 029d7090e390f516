"""Plan: the schedule lowered from an entry — which nodes run, and when each buffer dies."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from topos.autodiff.chain_rule import Schedule, backward_schedule
from topos.engine.arena import Arena, slot_view
from topos.engine.backward_plan import BackwardPlan, plan_backward
from topos.engine.compiled_steps import CompiledSteps, bound_views, structure_of
from topos.engine.fresh_block import FreshBlock
from topos.engine.liveness import last_consumers
from topos.engine.memory_plan import plan_memory
from topos.errors import GraphError, ShapeError
from topos.graph.symbol import Symbol
from topos.indices import Indices
from topos.tensor import Tensor

if TYPE_CHECKING:
    from topos.engine.run import Run
    from topos.graph.network import Network
    from topos.graph.node import Node
    from topos.graph.parameters import Parameters

Feeds = Mapping[Symbol, Tensor | Indices] | Iterable[tuple[Symbol, Tensor | Indices]]
Observer = Callable[[int, list[int]], None]


class Plan:
    """Evaluates the ancestors of the roots in recording order.

    In the *forward* posture each buffer is released right after its last
    consumer unless it is a root; in the *retain* posture every buffer is kept
    for the backward sweep. `forward` runs the plan on one batch.

    It is also a static memory plan (`memory`, see MemoryPlan): views cost nothing,
    every other computed buffer has a slot in one arena allocated on the first
    `forward` and reused by every later one, and computed roots get fresh buffers
    each run, so a Run's roots stay valid forever while its other buffers are
    overwritten by the next run (reading them then raises GraphError).
    """

    def __init__(
        self, network: Network, roots: tuple[int, ...], posture: str, *, steps: bool = True
    ) -> None:
        # `steps` false: the plan's steps are not compiled until `compile_steps()` (a remat
        # lowering reads the unconstrained plan's memory plan, and runs its steps only if
        # nothing is recomputed).
        if posture not in ("forward", "retain"):
            raise GraphError(f"plan: unknown posture {posture!r}")
        self.network = network
        self.posture = posture
        self.roots = tuple(dict.fromkeys(roots))
        # What a forward-posture run can answer for, made once: `Run.of` asks it for
        # every payload it reads (seven a step on a recurrent model).
        self._root_set = frozenset(self.roots)
        nodes = network.nodes
        needed = [False] * len(nodes)
        for root in self.roots:
            needed[root] = True
        for index in range(len(nodes) - 1, -1, -1):
            if needed[index]:
                for input_index in nodes[index].inputs:
                    needed[input_index] = True
        self.evaluated = tuple(index for index, keep in enumerate(needed) if keep)
        self._evaluated_set = frozenset(self.evaluated)
        self.last_consumer = last_consumers(nodes, self.evaluated)
        self.memory = plan_memory(nodes, self.evaluated, self.roots, posture, network.dtype)
        # The forward posture's profile is also the retain plan's release floor.
        self.live = self.memory.live
        self.releases = self.memory.releases
        self._started = False
        if steps:
            self.compile_steps()

    def compile_steps(self) -> None:
        """Compiles this plan's steps if its lowering did not (`steps=False`); a plan
        runs only once they are."""
        if not self._started:
            self._start(self.network.nodes, self.evaluated)

    def _start(self, program: Sequence[Node], positions: Sequence[int]) -> None:
        """Compiles the steps of `program` (the nodes a run evaluates, indexed by their
        position in it) at `positions`: for a plain plan the network's own nodes at their
        indices, for a remat plan its evaluations in order (see RematPlan)."""
        self._started = True
        self._program = program
        self._positions = positions
        self._arena: Arena | None = None
        # Counts forwards: a run is stale once a later forward has reused the arena.
        self.generation = 0
        self._compile()
        self._schedules: dict[int, Schedule] = {}
        self._backward_plans: dict[int, BackwardPlan] = {}

    def _start_as(self, other: Plan) -> None:
        """Starts as `_start` would with `other`'s program and positions, sharing what
        `other` compiled (its steps' structure and the run function's code; an arena and
        namespace of its own, as a replica's) rather than compiling a second copy."""
        self._started = True
        self._program = other._program
        self._positions = other._positions
        self._arena = None
        self.generation = 0
        self._sources = other._sources
        self._pending = other._pending
        self._steps = None
        self._compiled = None if other._compiled is None else other._compiled.twin()
        self._inputs = other._inputs
        self._schedules = {}
        self._backward_plans = {}

    def _node_of(self, position: int) -> int:
        """The network node a position of the program evaluates (itself, in a plain plan)."""
        return position

    def _compile(self) -> None:
        program = self._program
        dying: dict[int, list[int]] = {}
        for position, point in self.releases.items():
            dying.setdefault(point, []).append(position)
        # Each source: (position, node, kind); each step: (position, node, released). The
        # kernel calls with their slots are bound when the arena is first allocated.
        self._sources = []
        self._pending = []
        for position in self._positions:
            node = program[position]
            if node.is_source:
                self._sources.append((position, self._node_of(position), node.operation))
                if position in dying:
                    # An unconsumed source needs no buffer at all.
                    dying.pop(position)
                continue
            self._pending.append((position, node, tuple(dying.pop(position, ()))))
        self._steps: list | None = None
        # The run function, compiled now, while the plan is lowered: what compiling
        # allocates and frees is start-up's, so no free heap it leaves can serve a
        # measured step's arrays in pages resident since before ready (see
        # free_chunk_reservation), and a run after a release compiles nothing.
        self._compiled: CompiledSteps | None = self._compile_steps(
            bound_views(
                [
                    (
                        index,
                        tuple(node.inputs),
                        index in self.memory.fresh,
                        release,
                        self._bound_names(index, node),
                    )
                    for index, node, release in self._pending
                ],
                self.memory.views,
            )
        )
        # The inputs a run reads, each once, for the check that every one is fed.
        self._inputs = tuple(
            dict.fromkeys(index for _, index, kind in self._sources if kind == "input")
        )

    def _bound_names(self, index: int, node: Node) -> tuple[str, ...]:
        """The keywords `_bind` binds node `index`'s kernel with, in its order, known from
        the memory plan before the arena exists: its attributes, then its workspace, its
        scratch and its slot (`out`, unless its buffer is fresh each run)."""
        memory = self.memory
        names = dict.fromkeys(node.attributes)
        if index in memory.workspaces:
            names["workspace"] = None
        if index in memory.scratches:
            names["scratch"] = None
        if index not in memory.fresh and index in memory.slots:
            names["out"] = None
        return tuple(names)

    def _bind(self) -> None:
        """Allocates the arena and binds every kernel to its slot views, once per plan."""
        memory = self.memory
        dtype = self.network.dtype
        compiled = self._compiled
        arena = Arena(memory.arena_bytes)
        # The computed roots: fresh buffers every run, the small ones in one block.
        fresh_block = FreshBlock(
            {
                index: (tuple(node.shape), tuple(range(node.shape.rank)))
                for index, node, _ in self._pending
                if index in memory.fresh
            },
            dtype,
        )
        steps = []
        for index, node, release in self._pending:
            attributes = dict(node.attributes)
            workspace = memory.workspaces.get(index)
            if workspace is not None:
                attributes["workspace"] = slot_view(
                    arena.block, workspace.offset, workspace.shape, dtype, workspace.order
                )
            scratch = memory.scratches.get(index)
            if scratch is not None:
                attributes["scratch"] = slot_view(
                    arena.block, scratch.offset, scratch.shape, dtype, scratch.order
                )
            fresh = index in memory.fresh
            slot = memory.slots.get(index)
            if fresh:
                pass
            elif slot is not None:
                attributes["out"] = slot_view(
                    arena.block, slot.offset, slot.shape, dtype, slot.order
                )
            kernel = node.primitive.kernel
            specialize = node.primitive.specialize
            if specialize is not None:
                # Asked once, with the shapes every run will bring (see Primitive).
                shapes = tuple(self._program[i].shape for i in node.inputs)
                kernel = specialize(shapes, dict(node.attributes)) or kernel
            if attributes:
                kernel = partial(kernel, **attributes)
            steps.append((index, kernel, node.inputs, fresh, release))
        self._arena = arena
        self._fresh_block = fresh_block
        self._steps = steps
        if not compiled.fits(steps, memory.views):
            # `_bound_names` foretold other keywords than the kernels were bound with.
            compiled = self._compile_steps(structure_of(steps, memory.views))
        compiled.bind(steps)

    def _compile_steps(self, structure) -> CompiledSteps:
        """Compiles the run function of steps of `structure` (see CompiledSteps)."""
        self._compiled = CompiledSteps(structure, [position for position, _, _ in self._sources])
        return self._compiled

    def replica(self) -> Plan:
        """This plan with an arena of its own, allocated on its first run: what each shard
        of a workload runs, lowered once (lowering is a pure function of the network and
        the budget, so every shard's plan would be this one)."""
        self.compile_steps()
        twin = copy.copy(self)
        twin._arena = None
        twin._steps = None
        # Its own namespace (its kernels bind its own arena), the same compiled code.
        twin._compiled = self._compiled.twin()
        twin.generation = 0
        twin._schedules = {}
        twin._backward_plans = {}
        return twin

    def release(self) -> None:
        """Frees the arena and every backward arena (once no run still holds a view of
        them); the next forward or sweep allocates them afresh, so the memory a plan
        needs can be measured from a state where it holds none."""
        if not self._started:
            return  # nothing compiled, nothing allocated
        self._arena = None
        self._steps = None
        if self._compiled is not None:
            # Its kernels hold views of the arena: dropped, so the arena is freed.
            self._compiled.unbind()
        for backward in self._backward_plans.values():
            backward.release()

    def arena_blocks(self) -> list[np.ndarray]:
        """The bytes of every arena this plan's kernels write into, while allocated: the
        forward arena and each backward sweep's."""
        blocks = [] if self._arena is None else [self._arena.block]
        for backward in self._backward_plans.values():
            if backward.block is not None:
                blocks.append(backward.block)
        return blocks

    @property
    def readable(self) -> frozenset[int]:
        """Indices whose payload a run can answer for."""
        if self.posture == "retain":
            return self._evaluated_set
        return self._root_set

    def evaluates(self, index: int) -> bool:
        """Whether the plan evaluates node `index`."""
        return index in self._evaluated_set

    def live_bytes(self, elements: int) -> int:
        """`elements` of this network's dtype, in bytes."""
        return elements * self.network.dtype.itemsize

    @property
    def retain_all(self) -> int:
        """Elements held if no buffer were ever released."""
        return self.live.retain_all

    @property
    def peak(self) -> int:
        """Elements live at the worst moment: the forward peak, or in the retain posture
        everything it keeps."""
        return self.live.peak if self.posture == "forward" else self.live.retain_all

    @property
    def arena_bytes(self) -> int:
        """Bytes of the arena every run of this plan writes into (allocated once)."""
        return self.memory.arena_bytes

    @property
    def fresh_roots(self) -> frozenset[int]:
        """The nodes (network indices) whose buffers each run allocates afresh: the
        computed roots."""
        return self.memory.fresh

    @property
    def root_bytes(self) -> int:
        """Bytes of the fresh buffers each run makes for its computed roots."""
        return self.memory.root_bytes

    @property
    def peak_bytes(self) -> int:
        """The live volume in bytes: `peak` elements of this network's dtype."""
        return self.live_bytes(self.peak)

    def backward_plan(self, target: int) -> BackwardPlan:
        """The static memory plan of the engine's eager sweep from `target`: a slot in a
        backward arena for every buffer the sweep makes but does not return, from a
        shape-only run of the same sweep (cached per target)."""
        backward = self._backward_plans.get(target)
        if backward is None:
            wrt = [i for i in self.network.parameter_indices if i in self._evaluated_set]
            backward = plan_backward(
                self.network.nodes,
                self.backward_schedule(target),
                target,
                wrt,
                self.memory.layouts,
                self.network.dtype,
            )
            self._backward_plans[target] = backward
        return backward

    def backward_peak_bytes(self, target: int) -> int:
        """The most bytes the engine's eager sweep from `target` holds at once beyond the
        forward buffers: its backward arena and the fresh gradients it returns."""
        return self.backward_plan(target).predicted_bytes

    @property
    def predicted_training_bytes(self) -> int:
        """What a training step should add to the process at its peak: the arena, the
        roots' fresh buffers, and in the retain posture the backward sweep's peak (from
        the first rank-0 root, the loss an engine step differentiates)."""
        total = self.arena_bytes + self.root_bytes
        if self.posture == "retain":
            targets = [i for i in self.roots if self.network.nodes[i].shape.rank == 0]
            if targets:
                total += self.backward_peak_bytes(targets[0])
        return total

    def require_feeds(
        self, fed: Iterable[Symbol], defaults: bool | Iterable[Symbol] = False
    ) -> None:
        """Refuses (GraphError naming each) an input of `inputs` that is not among `fed`
        nor defaulted on purpose (`defaults`, as `forward` takes it): what `forward`
        checks, for a caller that splits feeds before running (a sharded step)."""
        self._check_fed({self.network.index(symbol, "forward") for symbol in fed}, defaults)

    def _check_fed(self, fed: Collection[int], defaults: bool | Iterable) -> None:
        """Refuses a run with an input neither fed nor defaulted on purpose, naming each."""
        self.compile_steps()  # which inputs it reads is known once it is
        if defaults is True:
            return
        allowed: set[int] = set()
        if defaults is not False:
            if isinstance(defaults, (Symbol, str, bytes)) or not isinstance(defaults, Iterable):
                raise TypeError(
                    "forward: defaults is True, False or a collection of input symbols, "
                    f"not {type(defaults).__name__}"
                )
            for symbol in defaults:
                allowed.add(self.network.index(getattr(symbol, "symbol", symbol), "forward"))
        missing = [index for index in self._inputs if index not in fed and index not in allowed]
        if missing:
            names = "; ".join(_input_name(self.network.nodes[i], i) for i in missing)
            noun = "input" if len(missing) == 1 else f"{len(missing)} inputs"
            raise GraphError(
                f"forward: no feed for {noun}: {names}; feed each, or ask for the recorded "
                f"default on purpose with defaults=True (or defaults=[symbol, ...])"
            )

    def _feed_arrays(self, feeds: Feeds) -> dict[int, np.ndarray]:
        network = self.network
        items = feeds.items() if isinstance(feeds, Mapping) else feeds
        arrays: dict[int, np.ndarray] = {}
        for symbol, tensor in items:
            index = network.index(symbol, "forward")
            node = network.nodes[index]
            if node.operation != "input":
                raise GraphError(f"forward: %{index} is a {node.operation}, not an input to feed")
            if node.holds_indices:
                arrays[index] = _index_feed(index, node, tensor)
                continue
            # One rule for arrays and Tensors alike: the dtype must be the network's. A
            # silent cast would hide float64 data in a float32 model (or the reverse).
            dtype = getattr(tensor, "dtype", None)
            if isinstance(tensor, (np.ndarray, Tensor)) and dtype != network.dtype:
                raise TypeError(
                    f"forward: the feed for input {_input_name(node, index)} is {dtype}; "
                    f"the network computes in {network.dtype}: cast it first "
                    f"(array.astype(np.{network.dtype}))"
                )
            tensor = _checked_feed(
                index,
                node,
                tensor,
                "input",
                Tensor,
                lambda array: Tensor(array.shape, array, dtype=network.dtype),
                "a Tensor or a NumPy array",
            )
            arrays[index] = tensor.numpy()
        return arrays

    @property
    def inputs(self) -> tuple[Symbol, ...]:
        """The inputs this plan reads, in recording order: what `forward` must be fed."""
        self.compile_steps()
        return tuple(self.network.symbol(index) for index in self._inputs)

    def forward(
        self,
        parameters: Parameters,
        feeds: Feeds = (),
        observer: Observer | None = None,
        *,
        defaults: bool | Iterable[Symbol] = False,
    ) -> Run:
        """Runs the plan once on `feeds`, a payload for each input it reads (`inputs`).

        A feed is a Tensor of the network's dtype or a NumPy array of it (an index input
        takes Indices or an integer array); another dtype is refused, never cast. An
        input left unfed is a GraphError naming it, unless its recorded default is asked
        for on purpose: `defaults=True` for every unfed input, or `defaults=[symbol,
        ...]` for those. `observer(node, live)` (for tests and tools) sees the indices of
        the buffers still held after each computed node."""
        from topos.engine.run import Run

        if parameters.network.origin != self.network.origin:
            raise GraphError("forward: the parameters belong to another network")
        fed = self._feed_arrays(feeds)
        self._check_fed(fed, defaults)
        payloads = self.network.payloads
        parameter_arrays = parameters.arrays()
        buffers: list[Any] = [None] * len(self._program)
        for position, index, kind in self._sources:
            if kind == "parameter":
                buffers[position] = parameter_arrays[index]
            elif kind == "input" and index in fed:
                buffers[position] = fed[index]
            else:
                buffers[position] = payloads[index].numpy()
        if self._steps is None:
            self._bind()
        # From here on the arena is overwritten: runs of earlier forwards are stale.
        self.generation += 1
        fresh_block = self._fresh_block
        fresh_block.renew()
        if observer is None:
            compiled = self._compiled
            if compiled.steps is not self._steps:
                # A tool replaced the step list (a measurement wraps the kernels).
                if not compiled.fits(self._steps):
                    compiled = self._compile_steps(structure_of(self._steps))
                compiled.bind(self._steps)
            compiled.execute(buffers, fresh_block.buffer)
            return Run(self, self._node_buffers(buffers), parameters, self.generation)
        for index, kernel, inputs, fresh, release in self._steps:
            if fresh:
                buffers[index] = kernel(
                    *[buffers[i] for i in inputs], out=fresh_block.buffer(index)
                )
            else:
                buffers[index] = kernel(*[buffers[i] for i in inputs])
            for released in release:
                buffers[released] = None
            if observer is not None:
                views = self.memory.views
                observer(
                    self._node_of(index),
                    [
                        self._node_of(i)
                        for i, b in enumerate(buffers)
                        if b is not None and i not in views
                    ],
                )
        return Run(self, self._node_buffers(buffers), parameters, self.generation)

    def _node_buffers(self, buffers: list[Any]) -> list[Any]:
        """A run's buffers by network node, from its buffers by program position."""
        return buffers

    def backward_schedule(self, target: int) -> Schedule:
        """The engine's sweep schedule for `target` over every parameter (cached)."""
        schedule = self._schedules.get(target)
        if schedule is None:
            wrt = [i for i in self.network.parameter_indices if i in self._evaluated_set]
            schedule = backward_schedule(self.network.nodes, target, wrt)
            self._schedules[target] = schedule
        return schedule

    def liveness_of(self, index: int) -> str:
        """How long node `index`'s buffer lives, as `describe()` prints it (a view's
        reference; its base's bytes live until the view's last consumer too)."""
        if self.posture == "forward":
            if index in self.releases:
                return f"freed after {self.releases[index]}"
            return "kept"
        if index in self.roots or index not in self.last_consumer:
            return "retained"
        return f"releasable after {self.last_consumer[index]}"

    def summary(self) -> list[str]:
        """The `plan:` and `live volume:` lines tools filter on."""
        head = (
            f"plan: {self.posture}; {len(self.evaluated)} of {len(self.network.nodes)} "
            f"nodes evaluated, {len(self.roots)} readable"
        )
        if self.posture == "forward":
            volume = (
                f"live volume: peak {self.live.peak} elements at node {self.live.peak_node}, "
                f"retain-all {self.live.retain_all}"
            )
        else:
            volume = (
                f"live volume: retain-all {self.live.retain_all}, "
                f"release floor {self.live.peak} at node {self.live.peak_node}"
            )
        return [head, volume]

    def arena_line(self) -> str:
        """The arena's size and how it is used, as `describe()` prints it last."""
        memory = self.memory
        slots = len(memory.all_slots())
        return (
            f"arena: {memory.arena_bytes} bytes in {slots} slots ({memory.sharing} buffers "
            f"share), {len(memory.views)} views, roots {memory.root_bytes} bytes fresh per run"
        )

    def describe(self) -> str:
        """One line per evaluated node (index, operation, shape, liveness), then the summary,
        then the arena line."""
        nodes = self.network.nodes
        labels = {index: nodes[index].label() for index in self.evaluated}
        shapes = {index: str(nodes[index].shape) for index in self.evaluated}
        # Columns as wide as their widest entry, so attribute lists stay aligned; an
        # outlandishly long label (col2im names its whole shape) only pushes its own row.
        label_width = min(max(map(len, labels.values()), default=0), 48)
        shape_width = max(map(len, shapes.values()), default=0)
        lines = [
            f"{index:>6}  {labels[index]:<{label_width}}  {shapes[index]:<{shape_width}}  "
            f"{self.liveness_of(index)}"
            for index in self.evaluated
        ]
        return "\n".join([*lines, *self.summary(), self.arena_line()])


def _input_name(node, index: int) -> str:
    """An input as an error names it: its index, and where the user recorded it."""
    if node.source is None:
        return f"%{index}"
    return f"%{index} {node.shape} recorded at {node.source}"


def _checked_feed(index: int, node, feed, kind: str, payload: type, adopt, accepted: str):
    """The feed of `kind` %index as its `payload` (a NumPy array adopted by `adopt`),
    refused in one line when it is of another type or another shape than recorded."""
    if isinstance(feed, np.ndarray):
        feed = adopt(feed)
    if not isinstance(feed, payload):
        raise TypeError(
            f"forward: the feed for {kind} %{index} is a {type(feed).__name__}, not {accepted}"
        )
    if feed.shape != node.shape:
        raise ShapeError(
            f"forward: the feed for {kind} %{index} has shape {feed.shape} "
            f"but the input was recorded with shape {node.shape}"
        )
    return feed


def _index_feed(index: int, node, feed) -> np.ndarray:
    """The array of an index input's feed: Indices, or an integer array, of the input's
    shape, every value below its `classes`."""
    classes = node.attributes["classes"]
    feed = _checked_feed(
        index,
        node,
        feed,
        "index input",
        Indices,
        lambda array: Indices(array.shape, array, classes),
        "Indices or an integer array",
    )
    if feed.classes > classes:
        # Indices checked their values against their own bound; a larger bound could
        # hold a value the input's tables have no row for.
        array = feed.numpy()
        if array.size and array.max() >= classes:
            raise ValueError(
                f"forward: the feed for index input %{index} holds a value >= {classes}"
            )
    return feed.numpy()
