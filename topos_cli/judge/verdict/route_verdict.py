"""What the verdict says about one route: its status, failures, speed and memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from topos_cli.judge.statistics import RatioEstimate
from topos_cli.judge.verdict.memory import Memory, measure_memory, memory_ratio
from topos_cli.judge.verdict.speed import Speed, measure_speed, speed_ratio
from topos_cli.result.repeat import Repeat
from topos_cli.result.route_verdict_record import FailureRecord, RouteVerdictRecord
from topos_cli.result.verdict_settings import VerdictSettings


@dataclass(frozen=True)
class Failure:
    """A run that did not finish cleanly."""

    repeat: int
    status: str
    detail: str | None
    nonfinite_step: int | None

    def record(self) -> FailureRecord:
        """The failure as a verdict keeps it: its fields."""
        return FailureRecord(**asdict(self))


@dataclass(frozen=True)
class RouteVerdict:
    """Everything the verdict says about one route."""

    route: str
    status: str
    repeats: int
    completed: int
    failures: tuple[Failure, ...]
    speed: Speed | None
    memory: Memory | None

    def record(self) -> RouteVerdictRecord:
        """The route's verdict as a result keeps it."""
        return RouteVerdictRecord(
            route=self.route,
            status=self.status,
            repeats=self.repeats,
            completed=self.completed,
            failures=[failure.record() for failure in self.failures],
            speed=None if self.speed is None else self.speed.record(),
            memory=None if self.memory is None else self.memory.record(),
        )


# Which status a route shows when its runs ended differently: its own faults first.
_STATUS_SEVERITY = ("failed", "timed out", "nonfinite", "interrupted", "ok")


def _route_status(repeats: Sequence[Repeat]) -> str:
    """The status a route shows: `ok` if every run was, else the most severe among them."""
    return min((repeat.status for repeat in repeats), key=_STATUS_SEVERITY.index)


def judge_route(
    route: str,
    repeats: Sequence[Repeat],
    settings: VerdictSettings,
) -> RouteVerdict:
    """A route's figures before ratios: status, failures, speed and memory of completed runs."""
    completed = [repeat for repeat in repeats if repeat.status == "ok"]
    failures = tuple(
        Failure(repeat.repeat, repeat.status, repeat.detail, repeat.nonfinite_step)
        for repeat in repeats
        if repeat.status != "ok"
    )
    return RouteVerdict(
        route=route,
        status=_route_status(repeats),
        repeats=len(repeats),
        completed=len(completed),
        failures=failures,
        speed=measure_speed(completed, settings),
        memory=measure_memory(completed),
    )


def with_ratios(
    route: RouteVerdict,
    reference: RouteVerdict | None,
    settings: VerdictSettings,
    known: RatioEstimate | None = None,
) -> RouteVerdict:
    """The route's verdict with its speed and memory ratios to the reference filled in
    (`known`: its time ratio's estimate as a result stored it, see `ratio_of_medians`)."""
    if reference is None or route.route == reference.route:
        return route
    speed = route.speed
    if speed is not None and reference.speed is not None:
        speed = replace(speed, ratio=speed_ratio(speed, reference.speed, settings, known))
    memory = route.memory
    if memory is not None and reference.memory is not None:
        memory = replace(
            memory,
            peak_ratio=memory_ratio(memory.peak_rss_bytes, reference.memory.peak_rss_bytes),
            training_delta_ratio=memory_ratio(
                memory.training_delta_bytes, reference.memory.training_delta_bytes
            ),
            step_tensor_ratio=memory_ratio(
                memory.step_tensor_bytes, reference.memory.step_tensor_bytes
            ),
        )
    return replace(route, speed=speed, memory=memory)
