"""The step-time pictures of a grade: each route's distribution of step times (a box over
the measured steps, every step a dot) and the time of every step across the run.

Warm-up is marked in both: the step thrown away before ready (a triangle)
and the leading steps the verdict leaves out of its median (crosses, and a
shaded band across the run). A warm-up far slower than the rest would squash
every other step into a line, so the axis stops above the measured steps and
a slower warm-up is drawn at its top edge with its time written beside it.
"""

from __future__ import annotations

from typing import Any

from topos_cli.judge.statistics import median
from topos_cli.render.plotting import (
    REPEAT_STYLES,
    legend_below,
    note_nothing_to_draw,
    route_colour,
    route_legend,
)
from topos_cli.render.report_contents import RepeatSeries, ReportContents
from topos_cli.shared.units import format_milliseconds

#: How far above the slowest measured step the axis reaches before warm-ups are clipped.
HEADROOM = 1.25


def _measured(repeat: RepeatSeries, warmup_steps: int) -> tuple[float, ...]:
    """The step times (ms) the verdict's median counts: all but the leading warm-up steps."""
    measured = repeat.step_milliseconds[warmup_steps:]
    return measured if measured else repeat.step_milliseconds


def _axis_top(contents: ReportContents) -> float | None:
    """Where the step-time axes stop: a little above the slowest measured step."""
    slowest = [
        max(_measured(repeat, contents.warmup_steps))
        for repeat in contents.repeats
        if repeat.step_milliseconds
    ]
    return max(slowest) * HEADROOM if slowest else None


def _warm_up_marker(
    axes: Any,
    x: float,
    value: float,
    top: float,
    colour: str,
    marker: str,
    size: float = 7,
    *,
    across: bool = False,
) -> bool:
    """A warm-up step at its time, or at the axis's end if beyond it; True if it was beyond.

    With `across` the time runs along x (the distribution's horizontal boxes). A time
    beyond the axis is not written beside its marker: with several routes such labels
    run into one another, so the legend says once how slow the slowest was.
    """
    beyond = value > top
    where = top * 0.985 if beyond else value
    point = ([where], [x]) if across else ([x], [where])
    axes.plot(
        *point,
        marker=marker,
        color=colour,
        linestyle="none",
        markersize=size,
        clip_on=not beyond,
    )
    return beyond


def _route_name(contents: ReportContents, route: str) -> str:
    """The route's name, with the status of its runs when none finished."""
    statuses = sorted({repeat.status for repeat in contents.repeats_of(route)})
    return route if "ok" in statuses else f"{route} ({', '.join(statuses)})"


def draw_step_time_distribution(axes: Any, contents: ReportContents) -> None:
    """Per route a box of its measured step times, each step a dot, warm-ups marked.

    The boxes lie along the time axis, one row per route from the top: a route's
    name and median then read on one line each, however many routes there are
    (side by side, eight names under eight boxes run into one another).
    """
    routes = [
        route
        for route in contents.routes
        if any(r.step_milliseconds for r in contents.repeats_of(route))
    ]
    top = _axis_top(contents)
    if not routes or top is None:
        note_nothing_to_draw(axes, "no step times recorded")
        return
    pooled = [
        [
            value
            for repeat in contents.repeats_of(route)
            for value in _measured(repeat, contents.warmup_steps)
        ]
        for route in routes
    ]
    boxes = axes.boxplot(
        pooled,
        positions=range(len(routes)),
        widths=0.5,
        showfliers=False,
        patch_artist=True,
        orientation="horizontal",
        medianprops={"color": "black", "linewidth": 1.5},
    )
    slowest_beyond = 0.0
    for index, (route, box) in enumerate(zip(routes, boxes["boxes"], strict=True)):
        colour = route_colour(route, contents.routes)
        box.set_facecolor(colour)
        box.set_alpha(0.35)
        box.set_gid(f"steps-box-{route}")
        values = pooled[index]
        # A fixed, even spread (golden-ratio steps), so the picture is the same every time.
        spread = [
            index + ((position * 0.618034) % 1.0 - 0.5) * 0.34 for position in range(len(values))
        ]
        axes.plot(
            values, spread, marker=".", linestyle="none", color=colour, markersize=3, alpha=0.6
        )
        for repeat in contents.repeats_of(route):
            marks = [
                (value, "x", 7, 0.22) for value in repeat.step_milliseconds[: contents.warmup_steps]
            ]
            if repeat.warm_up_milliseconds is not None:
                marks.append((repeat.warm_up_milliseconds, "^", 6, 0.36))
            for value, marker, size, offset in marks:
                if _warm_up_marker(
                    axes, index + offset, value, top, colour, marker, size, across=True
                ):
                    slowest_beyond = max(slowest_beyond, value)
    axes.set_yticks(
        range(len(routes)),
        [
            f"{_route_name(contents, route)} · {format_milliseconds(median(values))} ms"
            for route, values in zip(routes, pooled, strict=True)
        ],
    )
    axes.set_ylim(len(routes) - 0.4, -0.6)  # the first route at the top
    axes.set_xlim(0, top)
    axes.set_xlabel("time per step (ms); each route's median beside its name")
    axes.set_title("Step times")
    axes.grid(axis="y", visible=False)
    _warm_up_legend(axes, contents.warmup_steps, slowest_beyond)


def leading_steps(count: int) -> str:
    """`step 0`, `steps 0-2`: the leading steps the median leaves out."""
    return "step 0" if count == 1 else f"steps 0–{count - 1}"


def _warm_up_legend(axes: Any, warmup_steps: int, slowest_beyond: float) -> None:
    """What the warm-up markers mean, under the axes where it covers nothing; how slow the
    slowest warm-up beyond the axis's end was."""
    from matplotlib.lines import Line2D

    labels = ["warm-up step, thrown away", f"{leading_steps(warmup_steps)}: not in the median"]
    if slowest_beyond:
        labels[0] += f" (at the right edge: beyond it, up to {slowest_beyond:.0f} ms)"
    axes.legend(
        [
            Line2D([], [], marker="^", color="#555555", linestyle="none"),
            Line2D([], [], marker="x", color="#555555", linestyle="none"),
        ],
        labels,
        **legend_below(),
    )


def draw_time_per_step(axes: Any, contents: ReportContents) -> None:
    """Every step's time across the run, per run; the warm-up band shaded."""
    top = _axis_top(contents)
    repeats = [repeat for repeat in contents.repeats if repeat.step_milliseconds]
    if not repeats or top is None:
        note_nothing_to_draw(axes, "no step times recorded")
        return
    longest = 0
    for repeat in repeats:
        colour = route_colour(repeat.route, contents.routes)
        steps = range(len(repeat.step_milliseconds))
        longest = max(longest, len(repeat.step_milliseconds))
        axes.plot(
            list(steps),
            [min(value, top) for value in repeat.step_milliseconds],
            color=colour,
            linestyle=REPEAT_STYLES[repeat.repeat % len(REPEAT_STYLES)],
            linewidth=1.0,
            alpha=0.85,
            gid=f"steps-{repeat.route}-{repeat.repeat}",
        )
        for step, value in enumerate(repeat.step_milliseconds):
            if value > top:
                _warm_up_marker(axes, step, value, top, colour, "x", 5)
    band = None
    if contents.warmup_steps > 0:
        band = axes.axvspan(-0.5, contents.warmup_steps - 0.5, color="#999999", alpha=0.25)
    axes.set_xlim(-0.5, max(longest - 0.5, 1))
    axes.set_ylim(0, top)
    axes.set_xlabel("step")
    axes.set_ylabel("time per step (ms)")
    axes.set_title("Time per step across the run")
    extra = (
        []
        if band is None
        else [(band, f"{leading_steps(contents.warmup_steps)}: not in the median")]
    )
    route_legend(axes, contents.routes, [repeat.repeat for repeat in repeats], extra)
