"""StepPeak: the resident set read exactly at the moment each training step peaks.

VmHWM is the kernel's high-water mark, but since Linux 6.2 a process's RSS counters
are per-CPU and folded into the total in batches; the mark is taken from the folded
total when memory is unmapped, so it can miss the last few dozen pages touched on
each CPU before a peak (a quarter of a MiB a CPU, measured on the development
machine). VmRSS, which /proc/self/status sums exactly, does not lag. So the worker
also reads VmRSS at the moment a step holds everything `StepMemory` predicts (its
feeds, every shard's results and their mean), and the peak is the larger of the two.
Where /proc is missing it reads psutil's resident set instead (`sampled_memory`).
"""

from __future__ import annotations

from topos_cli.worker import sampled_memory


class StepPeak:
    """The largest VmRSS read by `read` (what the training calls at each step's peak)."""

    def __init__(self) -> None:
        self.bytes: int | None = None
        #: `ru_maxrss` at ready, where /proc is missing (see `sampled_memory.sampled_peak`).
        self.max_at_ready: int | None = None

    def read(self) -> None:
        """Reads VmRSS now (about 20 microseconds) and keeps it if it is the largest."""
        value = sampled_memory.resident_bytes()
        if value is not None and (self.bytes is None or value > self.bytes):
            self.bytes = value
