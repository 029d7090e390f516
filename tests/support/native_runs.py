"""Hand-built runs of a PyTorch step's routes, as its worker reports them: quicker than
grading one, for tests of how a native result is judged and shown."""

from __future__ import annotations

import struct

from topos_cli.result.repeat import Repeat
from topos_cli.shared.units import MEBIBYTE


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def native_run(
    route: str,
    delta_mebibytes: float,
    step_tensors: int | None,
    native: bool = True,
    repeat: int = 0,
) -> Repeat:
    """A run of a PyTorch step's route, as a current worker (`step_tensors` given) or an
    older one (None) says it; `native` False: one of topos's own routes."""
    ready: dict = {"ready_rss_bytes": 400 * MEBIBYTE}
    if native:
        ready["native"] = {"framework": "torch", "reference": "eager", "exact": True}
        if step_tensors is not None:
            ready["native"]["step_tensor_bytes"] = step_tensors
            ready["native"]["step_tensor_source"] = "torch.profiler"
    losses = [2.3, 2.2, 2.1]
    return Repeat(
        route,
        repeat,
        "ok",
        tuple(_bits(loss) for loss in losses),
        tuple(0.01 for _ in losses),
        ready_rss_bytes=400 * MEBIBYTE,
        peak_rss_bytes=400 * MEBIBYTE + int(delta_mebibytes * MEBIBYTE),
        facts={"ready": ready},
    )
