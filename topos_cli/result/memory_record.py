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
