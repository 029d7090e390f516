"""float64_twin_losses: topos's own trajectory of a workload, trained again in float64.

A peer route (torch, jax) trains the same recording in float32 with other kernels in
other orders, so its losses part from topos's as training amplifies rounding: over a
few dozen steps by 1e-3 and more on a correct program. How far is normal is what
float32 training itself shows: the same recording, the same initial parameters (float32
values, exact in float64), the same batches and learning rates, trained by topos in
float64 gives the trajectory float32 rounds away from; the relative difference of
topos's float32 losses from these, step by step, is float32's own drift. The grade
judges a peer's trajectory against it (`topos_cli.judge.verdict.agreement`).
"""

from __future__ import annotations

import math

import numpy as np

from topos.datasets import Dataset
from topos.training.training import Training
from topos.training.workload import Workload


def float64_twin_losses(
    workload: Workload, dataset: Dataset, steps: int, route: str = "recorded"
) -> list[float]:
    """The losses of `steps` steps of `workload` on `dataset`, trained by topos's `route`
    (the recorded route, else the workload's first) in float64; they stop before the first
    loss that is not finite. A workload whose `record` takes no dtype raises
    `DtypeNotSupportedError` (see `recording_dtype`), naming the fix."""
    route = route if route in workload.routes else workload.routes[0]
    training = Training(workload, route, dataset, steps, dtype=np.float64)
    losses: list[float] = []
    try:
        for step in range(steps):
            loss = float(training.step(step))
            if not math.isfinite(loss):
                break
            losses.append(loss)
    finally:
        training.program.close()
        training.program.release()
    return losses
