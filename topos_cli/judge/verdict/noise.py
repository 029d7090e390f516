"""Noise warnings: why the machine may have been too noisy to tell, each with a remedy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from topos_cli.judge.statistics import median
from topos_cli.judge.verdict.route_verdict import RouteVerdict
from topos_cli.result.grade_result import StoredWarning
from topos_cli.result.repeat import Repeat
from topos_cli.result.verdict_settings import VerdictSettings


@dataclass(frozen=True)
class NoiseWarning:
    """Why the machine may have been too noisy to tell, and what to do about it."""

    kind: str
    route: str | None
    message: str
    remedy: str
    #: What every warning of this kind shares ("steps are outliers beyond 1.5 IQR"), and
    #: this route's part of it ("engine 1 of 19"): so several routes' warnings of one
    #: kind can be said in one line (`warning_groups`). Empty for a machine-wide warning.
    cause: str = ""
    detail: str = ""

    def record(self) -> StoredWarning:
        """The warning as a verdict keeps it: its fields."""
        return StoredWarning(**asdict(self))


def noise_warnings(
    routes: Sequence[RouteVerdict],
    settings: VerdictSettings,
    load_average: float | None,
    cores: int | None,
) -> list[NoiseWarning]:
    """Warnings, each with a remedy, when the machine may have been too noisy to tell."""
    warnings = []
    for route in routes:
        speed = route.speed
        if speed is None:
            continue
        summary = speed.milliseconds_per_step
        note = speed.machine_note
        if speed.disturbed_steps:
            # The route's own evidence is the reason; the machine's load only context.
            evidence = speed.disturbance_evidence or "wall time their own CPU time cannot explain"
            context = f"; meanwhile {note}" if note else ""
            warnings.append(
                NoiseWarning(
                    kind="disturbed",
                    route=route.route,
                    message=(
                        f"{route.route}: {speed.disturbed_steps} of {summary.count} steps "
                        f"disturbed: {evidence}{context}; time is judged on the others"
                    ),
                    remedy="another program took the processors; grade on a quiet machine",
                    cause="steps disturbed, time judged on the others",
                    detail=(
                        f"{route.route} {speed.disturbed_steps} of {summary.count} "
                        f"({evidence}{context})"
                    ),
                )
            )
        elif note:
            warnings.append(
                NoiseWarning(
                    kind="busy machine",
                    route=route.route,
                    message=(
                        f"{route.route}: {note}, yet its own CPU time explains its wall "
                        "time: no step disturbed"
                    ),
                    remedy=(
                        "shared caches and memory bandwidth may still slow it; grade on a "
                        "quiet machine for figures to set beside a quiet machine's"
                    ),
                    cause=(
                        "the machine was busy, yet each route's own CPU time explains its "
                        "wall time: no step disturbed"
                    ),
                    detail=f"{route.route} ({note})",
                )
            )
        if summary.coefficient_of_variation > settings.variation_limit:
            warnings.append(
                NoiseWarning(
                    kind="variation",
                    route=route.route,
                    message=(
                        f"{route.route}: step times vary by "
                        f"{summary.coefficient_of_variation:.0%} (coefficient of variation "
                        f"over {settings.variation_limit:.0%})"
                    ),
                    remedy=(
                        "close other programs, set --threads below the number of cores, "
                        "and grade with --repeat 3 or more"
                    ),
                    cause=(
                        "step times vary beyond a coefficient of variation of "
                        f"{settings.variation_limit:.0%}"
                    ),
                    detail=f"{route.route} {summary.coefficient_of_variation:.0%}",
                )
            )
        if summary.count and speed.outliers / summary.count > settings.outlier_fraction_limit:
            warnings.append(
                NoiseWarning(
                    kind="outliers",
                    route=route.route,
                    message=(
                        f"{route.route}: {speed.outliers} of {summary.count} steps are "
                        f"outliers (beyond {settings.outlier_fence:g} IQR of the quartiles)"
                    ),
                    remedy="something else ran during the grade; grade again on a quiet machine",
                    cause=(
                        f"steps are outliers (beyond {settings.outlier_fence:g} IQR of the "
                        "quartiles)"
                    ),
                    detail=f"{route.route} {speed.outliers} of {summary.count}",
                )
            )
        medians = speed.repeat_medians_milliseconds
        if len(medians) >= 2:
            spread = (max(medians) - min(medians)) / median(medians)
            if spread > settings.repeat_spread_limit:
                warnings.append(
                    NoiseWarning(
                        kind="repeat spread",
                        route=route.route,
                        message=(
                            f"{route.route}: its repeats' medians span {spread:.0%} "
                            f"({min(medians):.1f} to {max(medians):.1f} ms/step)"
                        ),
                        remedy=(
                            "the machine drifted between runs (frequency scaling, heat, other "
                            "load); grade on a quiet machine with more --repeat"
                        ),
                        cause="the repeats' medians spread apart",
                        detail=(
                            f"{route.route} {spread:.0%} ({min(medians):.1f} to "
                            f"{max(medians):.1f} ms/step)"
                        ),
                    )
                )
    if load_average is not None:
        limit = settings.load_per_core_limit * (cores if cores else 1)
        if load_average > limit:
            on_cores = f" on {cores} cores" if cores else ""
            warnings.append(
                NoiseWarning(
                    kind="load",
                    route=None,
                    message=f"the machine was busy: load average {load_average:.2f}{on_cores}",
                    remedy="stop other work on the machine, or grade on an idle one",
                )
            )
    return warnings


#: The kind of the warning a sampled peak gives (`sampled_memory_warning`).
SAMPLED_MEMORY = "memory sampled"


def sampled_memory_warning(repeats: Sequence[Repeat]) -> NoiseWarning | None:
    """A warning when a completed run's peak memory was sampled rather than read from the
    kernel's high-water mark (no /proc: macOS): its figures are coarser, not exact."""
    sampled = sorted(
        {
            repeat.route
            for repeat in repeats
            if repeat.status == "ok" and repeat.facts.peak_source == "sampling"
        }
    )
    if not sampled:
        return None
    return NoiseWarning(
        kind=SAMPLED_MEMORY,
        route=None,
        message=(
            f"peak memory of {', '.join(sampled)} is sampled, not exact: this machine has no "
            "/proc high-water mark to reset, so the peak is the largest of psutil's readings "
            "(at each step's peak and every few ms) and ru_maxrss when it rose during the "
            "steps; a peak shorter than the interval can be missed"
        ),
        remedy="judge memory exactly on Linux, where the kernel keeps the high-water mark",
    )
