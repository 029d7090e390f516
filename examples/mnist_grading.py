"""Grades the training routes of the `mnist` convnet against each other: the seed
program (`cifar10_grading.py`) run on the mnist workload's model, data and schedule.

Run with: `TOPOS_ROUTE=recorded python examples/mnist_grading.py`
"""

from cifar10_grading import main

from topos.datasets import load_mnist
from topos.workloads import mnist

if __name__ == "__main__":
    main(mnist, load_mnist, channels=1, shuffle_state=5, rates=(0.1, 0.01))
