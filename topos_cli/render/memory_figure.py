"""The memory picture of a grade: each route's RSS over time with its ready point, measured
peak and predicted peak marked, and its training Δ measured beside predicted.

The timelines are aligned at the ready point (time 0), where training
begins, so the routes' training phases lie over one another; what came
before (loading the data, lowering the plan, the warm-up step) is to the left.
"""

from __future__ import annotations

from typing import Any

from topos_cli.judge.statistics import median
from topos_cli.render.plotting import (
    REPEAT_STYLES,
    legend_below,
    legend_beside,
    mebibytes,
    note_nothing_to_draw,
    route_colour,
)
from topos_cli.render.report_contents import RepeatSeries, ReportContents


def _timeline_end(repeat: RepeatSeries) -> float:
    """The last second the run's timeline covers; without one, the time its steps took."""
    if repeat.rss_seconds:
        return repeat.rss_seconds[-1]
    return sum(repeat.step_milliseconds) / 1000.0


def draw_memory_timeline(axes: Any, contents: ReportContents) -> None:
    """RSS over time per run; ready, measured peak and predicted peak marked per route."""
    repeats = contents.repeats
    if not repeats:
        note_nothing_to_draw(axes, "no runs recorded")
        return
    end = max([_timeline_end(repeat) for repeat in repeats] + [1.0])
    drawn_any = False
    marked_routes: set[str] = set()
    for repeat in repeats:
        colour = route_colour(repeat.route, contents.routes)
        style = REPEAT_STYLES[repeat.repeat % len(REPEAT_STYLES)]
        if repeat.rss_bytes:
            axes.plot(
                repeat.rss_seconds,
                [mebibytes(value) for value in repeat.rss_bytes],
                drawstyle="steps-post",
                color=colour,
                linestyle=style,
                linewidth=1.6,
                gid=f"rss-{repeat.route}-{repeat.repeat}",
            )
            drawn_any = True
        if repeat.route in marked_routes:
            continue
        marked_routes.add(repeat.route)
        _mark_route(axes, contents, repeat, colour, end)
    if not drawn_any:
        axes.text(
            0.02,
            0.04,
            "no RSS timeline recorded: marks only",
            transform=axes.transAxes,
            color="#555555",
        )
    axes.axvline(0.0, color="#444444", linewidth=1.0, linestyle="-", alpha=0.6)
    axes.text(0.0, 1.0, " ready", transform=axes.get_xaxis_transform(), va="top", fontsize=8)
    axes.set_xlabel("time since the route was ready (s); before 0: loading and warm-up")
    axes.set_ylabel("resident memory, RSS (MiB)")
    axes.set_title("Memory over time")
    axes.set_ylim(bottom=0)
    _memory_legend(axes, contents)


def _mark_route(
    axes: Any, contents: ReportContents, repeat: RepeatSeries, colour: str, end: float
) -> None:
    """The ready point, the measured peak and the predicted peak of a route's first run."""
    if repeat.ready_rss_bytes is not None:
        axes.plot(
            [0.0],
            [mebibytes(repeat.ready_rss_bytes)],
            marker="o",
            markersize=6,
            color=colour,
            linestyle="none",
            gid=f"ready-{repeat.route}",
        )
    if repeat.peak_rss_bytes is not None:
        axes.hlines(
            mebibytes(repeat.peak_rss_bytes),
            0.0,
            end,
            colors=colour,
            linestyles="--",
            linewidth=1.1,
        )
    predicted = contents.predicted_peak_bytes(repeat)
    if predicted is not None:
        axes.hlines(mebibytes(predicted), 0.0, end, colors=colour, linestyles=":", linewidth=1.4)


def route_memory_label(contents: ReportContents, repeat: RepeatSeries) -> str:
    """A route's legend entry: its name and the peaks marked, e.g.
    `engine: peak 245.0 MiB, predicted 243.9`."""
    parts = []
    if repeat.peak_rss_bytes is not None:
        parts.append(f"peak {mebibytes(repeat.peak_rss_bytes):.1f} MiB")
    predicted = contents.predicted_peak_bytes(repeat)
    if predicted is not None:
        parts.append(f"predicted {mebibytes(predicted):.1f}")
    return f"{repeat.route}: " + (", ".join(parts) if parts else "no peak recorded")


def _memory_legend(axes: Any, contents: ReportContents) -> None:
    """Each route with its peaks, then what the marks mean, in one legend."""
    from matplotlib.lines import Line2D

    handles, labels = [], []
    for route in contents.routes:
        repeat = contents.repeats_of(route)[0]
        handles.append(Line2D([], [], color=route_colour(route, contents.routes), linewidth=1.6))
        labels.append(route_memory_label(contents, repeat))
    handles += [
        Line2D([], [], color="#444444", marker="o", linestyle="none"),
        Line2D([], [], color="#444444", linestyle="--"),
        Line2D([], [], color="#444444", linestyle=":", linewidth=1.4),
    ]
    labels += [
        "RSS at ready",
        f"measured peak ({contents.peak_words})",
        "predicted peak (ready + plan)",
    ]
    legend_beside(axes, handles, labels)


def training_deltas(contents: ReportContents, route: str) -> tuple[int | None, int | None]:
    """A route's measured training Δ (the median over its runs) and its predicted one."""
    measured = [
        repeat.training_delta_bytes
        for repeat in contents.repeats_of(route)
        if repeat.training_delta_bytes is not None
    ]
    return (
        int(median(measured)) if measured else None,
        contents.predicted_training_bytes.get(route),
    )


def draw_training_delta_bars(axes: Any, contents: ReportContents) -> None:
    """Per route, the training Δ measured (solid) beside the plan's prediction (hatched).

    The bars lie along the memory axis, a row per route from the top, each value
    written at its bar's end: side by side, eight routes' names and sixteen values
    run into one another ("41.241.2").
    """
    routes = contents.routes
    if not routes:
        note_nothing_to_draw(axes, "no runs recorded")
        return
    height = 0.38
    longest = 0.0
    for index, route in enumerate(routes):
        colour = route_colour(route, routes)
        measured, predicted = training_deltas(contents, route)
        for offset, value, kind in (
            (-height / 2, measured, "measured"),
            (height / 2, predicted, "predicted"),
        ):
            if value is None:
                axes.text(0, index + offset, " n/a", ha="left", va="center", fontsize=7)
                continue
            length = mebibytes(value)
            longest = max(longest, length)
            axes.barh(
                index + offset,
                length,
                height,
                color=colour if kind == "measured" else "white",
                edgecolor=colour,
                hatch=None if kind == "measured" else "///",
                linewidth=1.2,
                gid=f"delta-{kind}-{route}",
            )
            axes.annotate(
                f"{length:.1f}",
                (length, index + offset),
                xytext=(2, 0),
                textcoords="offset points",
                ha="left",
                va="center",
                fontsize=7 if len(routes) > 3 else 8,
            )
    from matplotlib.patches import Patch

    axes.legend(
        handles=[
            Patch(facecolor="#777777", edgecolor="#777777"),
            Patch(facecolor="white", edgecolor="#777777", hatch="///"),
        ],
        labels=["measured", "predicted by the plan"],
        **legend_below(),
    )
    axes.set_yticks(range(len(routes)), list(routes))
    axes.set_ylim(len(routes) - 0.4, -0.6)  # the first route at the top
    # Room right of the longest bar for its value.
    axes.set_xlim(0, max(longest, 1.0) * 1.3)
    axes.set_xlabel("training Δ (MiB)")
    axes.set_title("Training memory:\npeak − ready RSS")
    axes.grid(axis="y", visible=False)
