"""The `mnist` workload: two conv/relu/pool stages on MNIST (or its synthetic stand-in):
8 and 16 filters (seeds 11, 12), a 784 -> 10 head (seed 13). One shard on one BLAS
thread, as every built-in: its losses do not depend on how many cores a machine has,
and it never spin-waits beside another program."""

from __future__ import annotations

from topos.datasets import load_mnist
from topos.training.workload import StepSchedule
from topos.workloads.convnet_workload import convnet_workload

workload = convnet_workload(
    "mnist",
    "two conv/relu/pool stages (8, 16 filters) and a 784 -> 10 head",
    channels=1,
    side=28,
    filters=(8, 16),
    kernel_seeds=(11, 12),
    head_seed=13,
    classes=10,
    load_dataset=load_mnist,
    learning_rate=StepSchedule(0.1, 0.01),
    shuffle_state=5,
)
