"""The `cifar10` workload: the seed program's convnet on CIFAR-10 (or its synthetic stand-in):
stages of 16, 32, 64 filters (seeds 21, 22, 23), a 1024 -> 10 head (seed 24). Two shards
of 32 images, the second in a forked process where that can run (Linux), else on a
thread (`cifar10-threads` keeps it on a thread everywhere)."""

from __future__ import annotations

from topos.datasets import load_cifar10
from topos.training.workload import StepSchedule
from topos.workloads.convnet_workload import convnet_workload

workload = convnet_workload(
    "cifar10",
    "three conv/relu/pool stages (16, 32, 64 filters) and a 1024 -> 10 head",
    channels=3,
    side=32,
    filters=(16, 32, 64),
    kernel_seeds=(21, 22, 23),
    head_seed=24,
    classes=10,
    load_dataset=load_cifar10,
    learning_rate=StepSchedule(0.05, 0.005),
    shuffle_state=3,
    shards=2,
    shard_processes=None,
)
