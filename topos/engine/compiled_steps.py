"""CompiledSteps: a plan's bound steps turned, once, into one straight-line function.

A plan's steps are (position, kernel, inputs, fresh, release) tuples: the kernel is
already bound to its arena slot, so what a run does per node besides the kernel is
Python's: unpack the tuple, build the argument list from the buffer list, test the fresh
flag, walk the release list. On a recurrent cell of small matrices that bookkeeping
costs as much as the kernels themselves. So the steps are written out as the source of
one function, a statement per kernel call and a `None` per release, every buffer a
local variable and every kernel a global of the function's own namespace, and compiled
once per plan. A kernel bound to its slot and attributes (a `functools.partial` with
keywords alone) is called as its function with those keywords written at the call site,
each value a global too: a partial with keywords merges them into a fresh dictionary on
every call, about a sixth of a GRU step's time (4.28 against 3.59 ms a step). The calls,
their operands, their keywords, their order and their outputs are the steps' own: a
compiled run computes what the loop computes, bit for bit.

A view whose operand is the same array every run (a computed node's arena slot, or a
view of one made the same way) is the same view every run: `reshape`, `narrow`,
`permute` of a slot. Such a view (a *bound view*) is made once, when the kernels are
bound, by its own kernel on that operand, and the run reads it back when the operand
is that very object (`v7 = c7 if v3 is g7 else k7(v3, ...)`): an identity test in
place of a kernel's Python frame and NumPy's view-making. The operand's kernel is what
makes it that object (a kernel returns its `out`), so a run whose operand is another
object calls the kernel as before; a kernel whose answer on the slot is not a view of
it (a copy) is never bound.

The function is compiled from the steps' structure alone (positions, operands, fresh,
releases), before the plan allocates its arena, so compiling's transient memory never
adds to the arena's; `bind` then hands it the kernels, and binds again when a tool
replaces the kernels of the same steps (a measurement wraps them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from functools import partial
from types import FunctionType
from typing import Any

import numpy as np

#: What a compiled run is called with: the run's buffer list (sources filled in, the
#: rest None), and the fresh block's `buffer(position)` for the computed roots.
Execute = Callable[[list[Any], Callable[[int], Any]], None]

#: One step's structure: (position, inputs, fresh, release, keywords, bound view), a
#: step without its kernel; `keywords` are the names its kernel is bound with (see
#: `bound_keywords`), `bound view` whether it is a view made once (see `bound_views`).
Structure = tuple[int, tuple[int, ...], bool, tuple[int, ...], tuple[str, ...], bool]


def bound_keywords(kernel: Any) -> tuple[str, ...]:
    """The keywords a compiled call passes `kernel`'s function: those of a partial that
    binds keywords alone, in order; none for any other callable (called as it is)."""
    if isinstance(kernel, partial) and not kernel.args:
        return tuple(kernel.keywords)
    return ()


def structure_of(steps: Sequence[tuple], views: Collection[int] = ()) -> list[Structure]:
    """The structure of bound steps (position, kernel, inputs, fresh, release), the
    positions `views` (a plan's views) made once where they can be (`bound_views`)."""
    return bound_views(
        [
            (position, tuple(inputs), fresh, tuple(release), bound_keywords(kernel))
            for position, kernel, inputs, fresh, release in steps
        ],
        views,
    )


def bound_views(steps: Sequence[tuple], views: Collection[int]) -> list[Structure]:
    """Steps' structures (position, inputs, fresh, release, keywords) with whether each is
    a bound view: a view among `views` of one operand that a step writes into a slot
    of its own (bound as `out`) or that is itself a bound view, and bound with no slot."""
    stable: set[int] = set()
    structure = []
    for position, inputs, fresh, release, keywords in steps:
        bound = (
            position in views
            and not fresh
            and "out" not in keywords
            and len(inputs) == 1
            and inputs[0] in stable
        )
        if bound or (not fresh and "out" in keywords):
            stable.add(position)
        structure.append((position, inputs, fresh, release, keywords, bound))
    return structure


class CompiledSteps:
    """The straight-line function (`execute`) of steps of one structure, and the step
    list whose kernels it calls (`steps`), so a plan knows when to bind again."""

    def __init__(self, structure: Sequence[Structure], sources: Sequence[int]) -> None:
        self.structure = list(structure)
        self.steps: Sequence[tuple] | None = None
        self._namespace: dict[str, Any] = {}
        self.execute: Execute = _compile(self.structure, sources, self._namespace)

    def twin(self) -> CompiledSteps:
        """The same function with a namespace of its own (unbound), for a plan's replica:
        the code is shared, so making it compiles nothing."""
        twin = copy.copy(self)
        twin.steps = None
        twin._namespace = {}
        for name, value in self._namespace.items():
            # A plan of several parts: each part's function, in the twin's namespace.
            if name.startswith("part") and isinstance(value, FunctionType):
                twin._namespace[name] = FunctionType(value.__code__, twin._namespace, name)
        twin.execute = FunctionType(self.execute.__code__, twin._namespace, "execute")
        return twin

    def fits(self, steps: Sequence[tuple], views: Collection[int] = ()) -> bool:
        """Whether `steps` (with a plan's `views`) have the structure this function was
        compiled for."""
        return structure_of(steps, views) == self.structure

    def bind(self, steps: Sequence[tuple]) -> None:
        """Makes `execute` call the kernels of `steps` (of this structure): a partial's
        function and its keywords' values, any other kernel itself."""
        namespace = self._namespace
        # What each stable position's step answers every run: its slot, or its view.
        answers: dict[int, Any] = {}
        for number, (step, structure) in enumerate(zip(steps, self.structure)):
            kernel, inputs, keywords, bound = step[1], structure[1], structure[4], structure[5]
            if keywords:
                namespace[f"k{number}"] = kernel.func
                for keyword in keywords:
                    namespace[f"a{number}_{keyword}"] = kernel.keywords[keyword]
            else:
                namespace[f"k{number}"] = kernel
            if "out" in keywords and not structure[2]:
                answers[structure[0]] = kernel.keywords["out"]
            if bound:
                namespace[f"g{number}"], namespace[f"c{number}"] = _view_once(
                    kernel, answers.get(inputs[0])
                )
                if namespace[f"c{number}"] is not None:
                    answers[structure[0]] = namespace[f"c{number}"]
        self.steps = steps

    def unbind(self) -> None:
        """Drops the kernels and keyword values `bind` handed in (they hold views of a
        plan's arena, which must be freed with the plan's release); `bind` hands them
        in again."""
        for number, structure in enumerate(self.structure):
            self._namespace.pop(f"k{number}", None)
            for keyword in structure[4]:
                self._namespace.pop(f"a{number}_{keyword}", None)
            self._namespace.pop(f"g{number}", None)
            self._namespace.pop(f"c{number}", None)
        self.steps = None


def _view_once(kernel: Callable[..., Any], operand: Any) -> tuple[Any, Any]:
    """(the operand a bound view is made of, the view) when `kernel` on `operand` answers
    a view of it; else (a guard no operand is, None), so the run calls the kernel."""
    if isinstance(operand, np.ndarray):
        view = kernel(operand)
        # A copy has an allocation of its own: it cannot overlap the operand's bytes.
        if isinstance(view, np.ndarray) and np.may_share_memory(view, operand):
            return operand, view
    return object(), None


#: Steps a compiled function holds at most: a plan of more is compiled as several
#: functions called in turn. Python's compiler holds a whole function's syntax tree and
#: symbol table while it compiles, and the heap it grows for them stays resident after:
#: 12,000 calls in one function left 83 MiB of RSS, in 24 functions of 500 11 MiB (a remat
#: plan's recomputations make its program several times recorded's).
PART_STEPS = 500


def _compile(
    structure: Sequence[Structure], sources: Sequence[int], namespace: dict[str, Any]
) -> Execute:
    """The run function, compiled: one straight-line function (`_part`) of every step, or,
    past `PART_STEPS` steps, one a part and `execute` calling them in turn, a buffer one
    part makes and a later part reads handed over through the run's list."""
    sources = frozenset(sources)
    if len(structure) <= PART_STEPS:
        return _part("execute", enumerate(structure), sources, namespace)
    handed: set[int] = set(sources)  # positions whose buffer the run's list holds
    names = []
    numbered = list(enumerate(structure))
    for first in range(0, len(structure), PART_STEPS):
        name = f"part{len(names)}"
        _part(name, numbered[first : first + PART_STEPS], frozenset(handed), namespace, handed)
        names.append(name)
    calls = "".join(f"    {name}(b, fresh)\n" for name in names)
    exec(compile(f"def execute(b, fresh):\n{calls}", "<topos compiled plan>", "exec"), namespace)
    return namespace["execute"]


def _part(
    name: str,
    steps: Sequence[tuple[int, Structure]],
    handed_in: frozenset[int],
    namespace: dict[str, Any],
    handed: set[int] | None = None,
) -> Execute:
    """The source of one run function over `steps` (numbered in the whole structure),
    compiled: load the buffers it reads from the run's list (`handed_in`: the sources,
    and after an earlier part what it handed over), call each kernel in order (with its
    bound keywords, and a computed root with its fresh buffer as `out`), drop each
    released buffer, and store every buffer still held back into the run's list.
    `handed`, for a part of several, is updated to the positions the list holds after;
    without it the function is the whole run, and loads every source first."""
    lines = [f"def {name}(b, fresh):"]
    held: dict[int, None] = {}
    if handed is None:
        for position in sorted(handed_in):
            lines.append(f"    v{position} = b[{position}]")
            held[position] = None
    loaded = set(held)
    for number, (position, inputs, fresh, release, keywords, bound) in steps:
        for read in inputs:
            if read not in loaded:
                # A part's input made before it: the list holds it (handed over).
                lines.append(f"    v{read} = b[{read}]")
                loaded.add(read)
        operands = [f"v{i}" for i in inputs]
        operands.extend(f"{keyword}=a{number}_{keyword}" for keyword in keywords)
        if fresh:
            operands.append(f"out=fresh({position})")
        call = f"k{number}({', '.join(operands)})"
        if bound:
            call = f"c{number} if v{inputs[0]} is g{number} else {call}"
        lines.append(f"    v{position} = {call}")
        held[position] = None
        loaded.add(position)
        for released in release:
            if released in loaded:
                lines.append(f"    v{released} = None")
            if released in handed_in:
                # The list held a released source (or a buffer handed over) from the
                # start; the loop drops it.
                lines.append(f"    b[{released}] = None")
                if handed is not None:
                    handed.discard(released)
            held.pop(released, None)
    # The run's list answers for every buffer a step left alive (roots, and in the
    # retain posture everything); a released one is None there, as the loop leaves it.
    for position in held:
        lines.append(f"    b[{position}] = v{position}")
    if handed is not None:
        handed.update(held)
    lines.append("    return None")
    exec(compile("\n".join(lines), "<topos compiled plan>", "exec"), namespace)
    return namespace[name]
