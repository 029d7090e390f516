"""Memory: a route's peak RSS and training delta over its completed runs, and their ratios;
for a native route (a PyTorch or JAX step) also its step tensors, the exact figure its
framework gives (`topos.native.step_tensors`), where RSS sees only the heap's growth."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from topos_cli.judge.statistics import median
from topos_cli.result.memory_record import MemoryRecord
from topos_cli.result.repeat import Repeat


@dataclass(frozen=True)
class Memory:
    """A route's memory over its completed repeats (medians), with ratios to the reference."""

    peak_rss_bytes: int | None
    peak_rss_range: tuple[int, int] | None
    ready_rss_bytes: int | None
    training_delta_bytes: int | None
    training_delta_range: tuple[int, int] | None
    peak_ratio: float | None
    training_delta_ratio: float | None
    #: A native route's step tensors (`NativeFacts.step_tensor_bytes`), median over its
    #: repeats, and their ratio to the reference's; None for topos's own routes.
    step_tensor_bytes: int | None = None
    step_tensor_ratio: float | None = None

    def record(self) -> MemoryRecord:
        """The memory figures as a verdict keeps them (the step tensors only where there
        are some: topos's own routes' JSON is as it was)."""
        unset = msgspec.UNSET
        return MemoryRecord(
            peak_rss_bytes=self.peak_rss_bytes,
            peak_rss_range=self.peak_rss_range,
            ready_rss_bytes=self.ready_rss_bytes,
            training_delta_bytes=self.training_delta_bytes,
            training_delta_range=self.training_delta_range,
            peak_ratio=self.peak_ratio,
            training_delta_ratio=self.training_delta_ratio,
            step_tensor_bytes=unset if self.step_tensor_bytes is None else self.step_tensor_bytes,
            step_tensor_ratio=unset if self.step_tensor_ratio is None else self.step_tensor_ratio,
        )


def _median_bytes(values: Sequence[int]) -> int:
    """The median of byte counts, rounded to a whole byte."""
    return round(median(values))


def measure_memory(repeats: Sequence[Repeat]) -> Memory | None:
    """The medians and ranges of a route's memory figures; `None` if none were measured."""
    peaks = [repeat.peak_rss_bytes for repeat in repeats if repeat.peak_rss_bytes is not None]
    readies = [repeat.ready_rss_bytes for repeat in repeats if repeat.ready_rss_bytes is not None]
    deltas = [
        repeat.training_delta_bytes for repeat in repeats if repeat.training_delta_bytes is not None
    ]
    tensors = [value for value in map(_step_tensor_bytes, repeats) if value is not None]
    if not peaks and not deltas:
        return None
    return Memory(
        peak_rss_bytes=_median_bytes(peaks) if peaks else None,
        peak_rss_range=(min(peaks), max(peaks)) if peaks else None,
        ready_rss_bytes=_median_bytes(readies) if readies else None,
        training_delta_bytes=_median_bytes(deltas) if deltas else None,
        training_delta_range=(min(deltas), max(deltas)) if deltas else None,
        peak_ratio=None,
        training_delta_ratio=None,
        step_tensor_bytes=_median_bytes(tensors) if tensors else None,
    )


def _step_tensor_bytes(repeat: Repeat) -> int | None:
    """A native repeat's step tensors, as its worker measured them when ready."""
    native = None if repeat.ready is None else repeat.ready.native
    return None if native is None else native.step_tensor_bytes


def memory_ratio(value: int | None, reference: int | None) -> float | None:
    """`value / reference`, or `None` when either is missing or the reference is not positive."""
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference
