"""MemoryRecord: a route's memory as a verdict keeps it (`memory.Memory`)."""

from __future__ import annotations

import msgspec

from topos_cli.result.result_part import Bytes, Ratio, ResultPart


class MemoryRecord(ResultPart, forbid_unknown_fields=False):
    """A route's memory over its completed repeats (medians and ranges), with ratios to the
    reference; a native route's step tensors only where there are some (`UNSET` fields are
    not written, so topos's own routes' JSON is as it was)."""

    peak_rss_bytes: Bytes | None = None
    peak_rss_range: tuple[Bytes, Bytes] | None = None
    ready_rss_bytes: Bytes | None = None
    training_delta_bytes: Bytes | None = None
    training_delta_range: tuple[Bytes, Bytes] | None = None
    peak_ratio: Ratio | None = None
    training_delta_ratio: Ratio | None = None
    step_tensor_bytes: Bytes | msgspec.UnsetType | None = msgspec.UNSET
    step_tensor_ratio: Ratio | msgspec.UnsetType | None = msgspec.UNSET

    @property
    def step_tensor_bytes_or_none(self) -> int | None:
        """The step tensors' bytes, `None` where the route has none (a field left unset)."""
        value = self.step_tensor_bytes
        return None if isinstance(value, msgspec.UnsetType) else value

    @property
    def step_tensor_ratio_or_none(self) -> float | None:
        """The step tensors' ratio to the reference's, `None` where there is none."""
        value = self.step_tensor_ratio
        return None if isinstance(value, msgspec.UnsetType) else value
