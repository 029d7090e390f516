"""The `cifar10-threads` workload: `cifar10` (same model, data, batches and loss bits) with
its second shard on a thread of the worker, as every platform can run it: what `cifar10`
was before its shards moved into processes, kept so the two can be compared."""

from __future__ import annotations

from dataclasses import replace

from topos.workloads.cifar10 import workload as cifar10

workload = replace(
    cifar10,
    name="cifar10-threads",
    description=cifar10.description + "; shard 1 on a thread",
    shard_processes=False,
)
