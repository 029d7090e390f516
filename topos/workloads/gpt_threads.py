"""The `gpt-threads` workload: `gpt` (same model, text, windows and loss bits) with its
second shard on a thread of the worker, as every platform can run it: what `gpt` was
before its shards moved into processes, kept so the two can be compared."""

from __future__ import annotations

from dataclasses import replace

from topos.workloads.gpt import workload as gpt

workload = replace(
    gpt,
    name="gpt-threads",
    description=gpt.description + "; shard 1 on a thread",
    shard_processes=False,
)
