"""Which routes a frontier picture may draw as different: those the verdict's own time
judgement tells from every other drawn route. One run's quartiles, however far apart,
are not enough when the verdict calls the pair inconclusive; judged here, kept in the
verdict record (`JudgedVerdict.told_apart`), so the picture only reads it."""

from __future__ import annotations

from collections.abc import Sequence

from topos_cli.judge.verdict.route_verdict import RouteVerdict
from topos_cli.judge.verdict.speed import Speed, speed_ratio
from topos_cli.result.verdict_settings import VerdictSettings


def drawn_on_frontier(route: RouteVerdict) -> bool:
    """Whether a frontier picture draws `route`: its time and its training Δ measured."""
    return (
        route.speed is not None
        and route.memory is not None
        and route.memory.training_delta_bytes is not None
    )


def told_apart(speeds: Sequence[Speed], settings: VerdictSettings) -> list[bool]:
    """Per speed, whether the time judgement (`speed_ratio`, with the grade's settings)
    claims it faster or slower than every other one."""
    count = len(speeds)
    claims = [[True] * count for _ in range(count)]
    for first in range(count):
        for second in range(first + 1, count):
            ratio = speed_ratio(speeds[first], speeds[second], settings)
            claim = ratio is not None and ratio.direction in ("faster", "slower")
            claims[first][second] = claims[second][first] = claim
    return [all(row) for row in claims]


def routes_told_apart(routes: Sequence[RouteVerdict], settings: VerdictSettings) -> dict[str, bool]:
    """Per route a frontier picture draws (`drawn_on_frontier`), whether it is told
    apart from every other drawn route (`told_apart`)."""
    drawn = [route for route in routes if drawn_on_frontier(route)]
    speeds = [route.speed for route in drawn if route.speed is not None]
    return {
        route.route: apart for route, apart in zip(drawn, told_apart(speeds, settings), strict=True)
    }
