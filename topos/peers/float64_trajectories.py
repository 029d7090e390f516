"""Float64Trajectories: a peer's workload trained again in float64, by topos and by the peer.

A peer's float32 losses part from topos's float32 losses as training amplifies rounding;
how far is normal is what float32 training itself shows. Both programs trained again in
float64 (the same recording, initial parameters, batches and learning rates) give the
trajectories float32 rounds away from: topos's drift is the relative difference of its
float32 losses from its float64 ones, the peer's of its float32 losses from its own
float64 ones. Their float64 losses agree with each other to float64 rounding when the
programs are the same (`tests/peers/test_hand_twins.py` holds them to 1e-12).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from topos.datasets import Dataset
from topos.training.float64_twin import float64_twin_losses
from topos.training.workload import Workload


@dataclass(frozen=True)
class Float64Trajectories:
    """The float64 losses of topos (recorded route) and of the peer, each with the seconds
    it took, or the one-line reason it could not be had (None when it was)."""

    topos_losses: tuple[float, ...] = ()
    peer_losses: tuple[float, ...] = ()
    topos_seconds: float | None = None
    peer_seconds: float | None = None
    topos_absent: str | None = None
    peer_absent: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The trajectories as JSON-ready data (the worker's `Float64Facts`)."""
        return {
            "topos_losses": list(self.topos_losses),
            "peer_losses": list(self.peer_losses),
            "topos_seconds": self.topos_seconds,
            "peer_seconds": self.peer_seconds,
            "topos_absent": self.topos_absent,
            "peer_absent": self.peer_absent,
        }


def _reason(error: BaseException) -> str:
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def float64_trajectories(
    workload: Workload, route: str, dataset: Dataset, steps: int, peer: bool = True
) -> Float64Trajectories:
    """`steps` steps of `workload` on `dataset` in float64 by topos and (with `peer`) by
    peer route `route`; either that cannot be had says why instead (a workload whose
    `record` takes no dtype, say). The peer's float64 run sets its framework's 64-bit
    mode where it has one (JAX's `jax_enable_x64`, process-wide), so the caller runs this
    where no float32 program of the peer runs after it (the grade: a forked child)."""
    values: dict[str, Any] = {}
    began = time.perf_counter()
    try:
        values["topos_losses"] = tuple(float64_twin_losses(workload, dataset, steps))
        values["topos_seconds"] = time.perf_counter() - began
    except Exception as error:  # the twin is evidence, not the grade: say why it is missing
        values["topos_absent"] = _reason(error)
    if not peer:
        values["peer_absent"] = "not run (no forked process to run it in)"
        return Float64Trajectories(**values)
    began = time.perf_counter()
    try:
        from topos.peers.peer_training import PeerTraining

        training = PeerTraining(workload, route, dataset, steps, dtype=np.float64)
        losses = []
        for step in range(steps):
            loss = float(training.step(step))
            if not np.isfinite(loss):
                break  # as topos's: the losses up to the first that is not finite
            losses.append(loss)
        values["peer_losses"] = tuple(losses)
        values["peer_seconds"] = time.perf_counter() - began
    except Exception as error:  # as above
        values["peer_absent"] = _reason(error)
    return Float64Trajectories(**values)
