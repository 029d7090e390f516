"""The `mnist` workload: two conv/relu/pool stages on MNIST (or its synthetic stand-in):
8 and 16 filters (seeds 11, 12), a 784 -> 10 head (seed 13). One shard, on the
process's BLAS threads (`blas_threads=None`: its losses are the ones it always had)."""

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
    # Its one shard's products on the process's BLAS threads, as mnist has always
    # trained: OpenBLAS's sums differ between one thread and two (its third step's loss
    # moves in the last place), and a built-in's losses do not change.
    blas_threads=None,
)
