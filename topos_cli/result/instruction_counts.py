"""RouteCounts: the work each measured step of a route executed, as Valgrind counted it.

A count is a property of the code, the data and the kernels that ran, not of the
machine's load: the same step counts the same beside any neighbour. So where wall time
cannot decide on a busy machine, counts can (`grade --measure instructions`). They are
blind to what costs time without executing instructions in the process: a sleep, I/O,
waiting for memory, and the speed-up of parallel threads.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from topos_cli.result.result_part import Count, ResultPart
from topos_cli.result.worker_facts import Numerics

#: How a route's counting ended: counted; failed (the counting run broke, `detail` says
#: how); or not counted (no Valgrind, no compiler: `detail` says what is missing).
CountStatus = Literal["counted", "failed", "not counted"]


class RouteCounts(ResultPart):
    """One route's counted steps: instructions executed in each measured step (every
    process of the route: the worker and its shard processes), and what counted them."""

    route: str
    status: CountStatus
    #: What was counted: `instructions` (callgrind's `Ir`).
    measure: str = "instructions"
    #: Per measured step, in order: the instructions the step executed.
    per_step: list[Count] = msgspec.field(default_factory=list)
    #: Warm-up steps run, uncounted, before the counted ones.
    warmup_steps: Count | None = None
    #: The processes whose counts were added up per step (the worker and its shards).
    processes: Count | None = None
    #: The counted steps' loss bits, to tell whether the kernels under Valgrind computed
    #: what the timed runs computed.
    loss_bits: list[Count] = msgspec.field(default_factory=list)
    #: The tool (`valgrind-3.19.0 callgrind`) and the kernels that ran under it.
    tool: str | None = None
    numerics: Numerics | None = None
    seconds: float | None = None
    detail: str | None = None

    @property
    def judged_steps(self) -> list[int]:
        """The counts judged: all but the first counted step, which (as the time verdict's
        first measured step) still does one-off work, such as allocating again what
        ready's garbage collection freed."""
        return list(self.per_step[1:]) if len(self.per_step) > 1 else list(self.per_step)

    @property
    def median(self) -> float | None:
        """The median of the judged steps' counts (None when none were counted)."""
        if not self.per_step:
            return None
        ordered = sorted(self.judged_steps)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            return float(ordered[middle])
        return (ordered[middle - 1] + ordered[middle]) / 2.0

    @property
    def spread(self) -> float | None:
        """(highest - lowest) / median over the counted steps: how far from constant."""
        middle, judged = self.median, self.judged_steps
        if not judged or not middle:
            return None
        return (max(judged) - min(judged)) / middle

    @property
    def kernels(self) -> tuple[str | None, tuple[str, ...]]:
        """The BLAS kernel and NumPy's SIMD targets that ran under the counter: counts of
        other kernels count other code, and are not compared."""
        numerics = self.numerics
        if numerics is None:
            return None, ()
        return numerics.blas_kernel, tuple(numerics.simd or ())
