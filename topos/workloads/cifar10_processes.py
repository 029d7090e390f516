"""The `cifar10-processes` workload: `cifar10` (same model, data, batches and loss bits)
with its second shard in a forked process whatever the platform (refused off Linux). On
Linux it is `cifar10` itself, which moved its second shard into a process; the name is
kept for the results and scripts that use it."""

from __future__ import annotations

from dataclasses import replace

from topos.workloads.cifar10 import workload as cifar10

workload = replace(
    cifar10,
    name="cifar10-processes",
    description=cifar10.description + "; shard 1 in a forked process",
    shard_processes=True,
)
