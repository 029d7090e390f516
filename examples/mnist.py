"""Train the mnist convnet for a few epochs and report its test accuracy.

Run with: `python examples/mnist.py` (TOPOS_EPOCHS, TOPOS_STEPS, TOPOS_DATA adjust it).
"""

from classifier import main

from topos.workloads import resolve

if __name__ == "__main__":
    main(resolve("mnist"))
