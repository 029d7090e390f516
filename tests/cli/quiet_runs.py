"""Quiet runs made by hand for the tests of time's words: repeats at chosen medians, CPU
explaining the wall, no preemption."""

from __future__ import annotations

import random

from topos_cli.result.repeat import Repeat


def runs(
    route: str,
    medians: list[float],
    *,
    steps: int = 20,
    seed: int = 0,
    peak_mebibytes: list[int] | None = None,
) -> list[Repeat]:
    """Quiet repeats of `route`, one per median step time (steps within 2% of it, CPU
    explaining the wall, no preemption), with the peak RSS of each if given."""
    generator = random.Random(seed)
    made = []
    for repeat, median in enumerate(medians):
        wall = [median * generator.uniform(0.98, 1.02) for _ in range(steps)]
        peak = 500 if peak_mebibytes is None else peak_mebibytes[repeat]
        made.append(
            Repeat(
                route,
                repeat,
                "ok",
                loss_bits=(0x3F800000,) * steps,
                step_seconds=tuple(wall),
                step_cpu_seconds=tuple(seconds * 0.99 for seconds in wall),
                step_involuntary_switches=(0,) * steps,
                peak_rss_bytes=peak << 20,
                ready_rss_bytes=200 << 20,
            )
        )
    return made


#: The CI workflow's case of the issue: identical library code, one repeat drifted.
WIDE_NEW = [0.0092, 0.0114, 0.0120]
WIDE_OLD = [0.0100, 0.0100, 0.0100]
