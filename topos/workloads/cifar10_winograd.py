"""The `cifar10-winograd` workload: `cifar10` (same model, data, batches, shards and
initial weights) with its second and third convolutions (16 and 32 input channels) by
Winograd's F(4x4, 3x3) instead of the direct product; the first (3 channels) stays
direct. The same function to float32 rounding, some ten times coarser than the direct
form's, so its losses drift from `cifar10`'s (README, performance section)."""

from __future__ import annotations

from dataclasses import replace

from topos.workloads.cifar10 import workload as cifar10

workload = replace(
    cifar10,
    name="cifar10-winograd",
    description=cifar10.description + "; Winograd F(4x4, 3x3) for the 16- and 32-channel layers",
    record=replace(cifar10.record, algorithm="winograd"),
)
