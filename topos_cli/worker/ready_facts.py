"""What every route's worker says alike when ready, whatever computes its steps (topos's
plan, a peer's emitted program, a PyTorch or JAX step of one's own): who and what it
is, its warm-up, its memory at ready and what it computes with."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from typing import Any

from topos_cli.result.data_facts import DataFacts
from topos_cli.worker.code_origin import code_facts
from topos_cli.worker.numerics_facts import blas_description
from topos_cli.worker.protocol import WorkerCommand


def shared_ready_facts(
    arguments: WorkerCommand,
    workload: str,
    dataset: DataFacts,
    *,
    lower_seconds: float | None,
    warm_up_times: Sequence[float],
    held_seconds: float,
    ready_rss_bytes: int | None,
    high_water_source: str,
) -> dict[str, Any]:
    """The `ReadyFacts` fields every worker fills the same way, by name. The first warm-up
    step's time is the run's first (cold) step; with no warm-up there is none, and the
    first measured step is the cold one."""
    return {
        "pid": os.getpid(),
        "workload": workload,
        "route": arguments.route,
        "steps": arguments.steps,
        "dataset": dataset,
        "lower_seconds": lower_seconds,
        "warm_up_seconds": warm_up_times[0] if warm_up_times else None,
        "warmup_steps": len(warm_up_times),
        "warm_up_step_seconds": list(warm_up_times),
        "held_seconds": held_seconds,
        "ready_rss_bytes": ready_rss_bytes,
        "high_water_source": high_water_source,
        "python": platform.python_version(),
        "numerics": blas_description(),
        "code": code_facts(arguments.workload),
    }
