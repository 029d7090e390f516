"""Grades the training routes of the `mnist` convnet against each other: the seed
program (`cifar10_grading.py`) run on the mnist workload's model, data and schedule.

Run with: `TOPOS_ROUTE=recorded python examples/mnist_grading.py`
"""

from cifar10_grading import CLASSES, main

from topos import Tape
from topos.datasets import load_mnist
from topos.models import ConvNet


def mnist_model(tape: Tape) -> ConvNet:
    """Stages of 8 and 16 filters (seeds 11, 12), a 784 -> 10 head (seed 13)."""
    return ConvNet(tape, 1, 28, (8, 16), (11, 12), 13, CLASSES)


if __name__ == "__main__":
    main(mnist_model, load_mnist, channels=1, side=28, shuffle_state=5, rates=(0.1, 0.01))
