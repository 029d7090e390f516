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

The function is compiled from the steps' structure alone (positions, operands, fresh,
releases), before the plan allocates its arena, so compiling's transient memory never
adds to the arena's; `bind` then hands it the kernels, and binds again when a tool
replaces the kernels of the same steps (a measurement wraps them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from functools import partial
from types import FunctionType
from typing import Any

#: What a compiled run is called with: the run's buffer list (sources filled in, the
#: rest None), and the fresh block's `buffer(position)` for the computed roots.
Execute = Callable[[list[Any], Callable[[int], Any]], None]

#: One step's structure: (position, inputs, fresh, release, keywords), a step without
#: its kernel; `keywords` are the names its kernel is bound with (see `bound_keywords`).
Structure = tuple[int, tuple[int, ...], bool, tuple[int, ...], tuple[str, ...]]


def bound_keywords(kernel: Any) -> tuple[str, ...]:
    """The keywords a compiled call passes `kernel`'s function: those of a partial that
    binds keywords alone, in order; none for any other callable (called as it is)."""
    if isinstance(kernel, partial) and not kernel.args:
        return tuple(kernel.keywords)
    return ()


def structure_of(steps: Sequence[tuple]) -> list[Structure]:
    """The structure of bound steps (position, kernel, inputs, fresh, release)."""
    return [
        (position, tuple(inputs), fresh, tuple(release), bound_keywords(kernel))
        for position, kernel, inputs, fresh, release in steps
    ]


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
        twin.execute = FunctionType(self.execute.__code__, twin._namespace, "execute")
        return twin

    def fits(self, steps: Sequence[tuple]) -> bool:
        """Whether `steps` have the structure this function was compiled for."""
        return structure_of(steps) == self.structure

    def bind(self, steps: Sequence[tuple]) -> None:
        """Makes `execute` call the kernels of `steps` (of this structure): a partial's
        function and its keywords' values, any other kernel itself."""
        namespace = self._namespace
        for number, (step, structure) in enumerate(zip(steps, self.structure)):
            kernel, keywords = step[1], structure[4]
            if keywords:
                namespace[f"k{number}"] = kernel.func
                for keyword in keywords:
                    namespace[f"a{number}_{keyword}"] = kernel.keywords[keyword]
            else:
                namespace[f"k{number}"] = kernel
        self.steps = steps

    def unbind(self) -> None:
        """Drops the kernels and keyword values `bind` handed in (they hold views of a
        plan's arena, which must be freed with the plan's release); `bind` hands them
        in again."""
        for number, structure in enumerate(self.structure):
            self._namespace.pop(f"k{number}", None)
            for keyword in structure[4]:
                self._namespace.pop(f"a{number}_{keyword}", None)
        self.steps = None


def _compile(
    structure: Sequence[Structure], sources: Sequence[int], namespace: dict[str, Any]
) -> Execute:
    """The source of the run function, compiled: load the sources into locals, call each
    kernel in order (with its bound keywords, and a computed root with its fresh buffer
    as `out`), drop each released buffer, and store every buffer still held back into
    the run's list."""
    lines = ["def execute(b, fresh):"]
    held: dict[int, None] = {}
    sources = frozenset(sources)
    for position in sorted(sources):
        lines.append(f"    v{position} = b[{position}]")
        held[position] = None
    for number, (position, inputs, fresh, release, keywords) in enumerate(structure):
        operands = [f"v{i}" for i in inputs]
        operands.extend(f"{keyword}=a{number}_{keyword}" for keyword in keywords)
        if fresh:
            operands.append(f"out=fresh({position})")
        lines.append(f"    v{position} = k{number}({', '.join(operands)})")
        held[position] = None
        for released in release:
            lines.append(f"    v{released} = None")
            if released in sources:
                # The list held a released source from the start; the loop drops it.
                lines.append(f"    b[{released}] = None")
            held.pop(released, None)
    # The run's list answers for every buffer a step left alive (roots, and in the
    # retain posture everything); a released one is None there, as the loop leaves it.
    for position in held:
        lines.append(f"    b[{position}] = v{position}")
    lines.append("    return None")
    exec(compile("\n".join(lines), "<topos compiled plan>", "exec"), namespace)
    return namespace["execute"]
