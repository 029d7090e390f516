"""The trend of one figure across a group of grades: a line per route, grades in time order
along the axis (labelled with their commit and date), significant changes marked.

A mark is drawn where `compare` calls the change from the grade before a
significant regression (a red triangle pointing up) or improvement (a green
one pointing down); changes within tolerance or not significant are unmarked.
"""

from __future__ import annotations

from typing import Any

from topos_cli.report.display.plotting import (
    mebibytes,
    new_figure,
    note_nothing_to_draw,
    route_colour,
)
from topos_cli.report.history import FIGURES, HistoryGroup

#: Each figure's axis label, with its unit.
AXIS_LABELS = {
    "ms/step": "median time per step (ms)",
    "peak RSS": "peak RSS (MiB)",
    "training delta": "training Δ: peak − ready RSS (MiB)",
}

MARK_STYLES = {
    "regression": {"marker": "^", "color": "#d62728", "label": "significant regression"},
    "improvement": {"marker": "v", "color": "#2ca02c", "label": "significant improvement"},
}


def point_label(created: str, commit: str) -> str:
    """A grade's tick label: its commit's first 8 characters over its date and time."""
    when = created.replace("T", " ").removesuffix("Z")
    short = commit.split(" ")[0][:8] + ("*" if "uncommitted" in commit else "")
    return f"{short}\n{when[:10]}\n{when[11:16]}"


def draw_trend(axes: Any, group: HistoryGroup, figure: str) -> None:
    """One figure's values per route across the group's grades; significant changes marked."""
    routes = group.routes
    drawn = False
    marked: set[str] = set()
    for route in routes:
        xs, ys = [], []
        for index, point in enumerate(group.points):
            value = point.values.get((route, figure))
            if value is None:
                continue
            y = value if figure == "ms/step" else mebibytes(value)
            xs.append(index)
            ys.append(y)
            status = point.significant(route, figure)
            if status is not None:
                style = MARK_STYLES[status]
                axes.plot(
                    [index],
                    [y],
                    marker=style["marker"],
                    color=style["color"],
                    markersize=13,
                    linestyle="none",
                    markerfacecolor="none",
                    markeredgewidth=2,
                    label=None if status in marked else style["label"],
                    gid=f"significant-{status}-{route}-{index}",
                )
                marked.add(status)
        if xs:
            axes.plot(
                xs,
                ys,
                marker="o",
                color=route_colour(route, routes),
                linewidth=1.6,
                markersize=5,
                label=route,
                gid=f"trend-{route}",
            )
            drawn = True
    if not drawn:
        note_nothing_to_draw(axes, f"no {figure} recorded")
        return
    # At most about ten labels, so they never run into one another.
    every = max(1, -(-len(group.points) // 10))
    ticks = list(range(0, len(group.points), every))
    axes.set_xticks(
        ticks,
        [point_label(group.points[i].created, group.points[i].commit) for i in ticks],
        fontsize=8,
    )
    axes.set_xlim(-0.5, len(group.points) - 0.5)
    axes.set_ylim(0, max(axes.get_ylim()[1], 1e-9) * 1.12)
    axes.set_ylabel(AXIS_LABELS[figure])
    axes.set_xlabel("grade: commit, date, time (UTC)")
    axes.set_title(figure)
    axes.legend(loc="lower left", fontsize=8)


def trend_figure(group: HistoryGroup, figures: tuple[str, ...] = FIGURES) -> Any:
    """A plot per figure, side by side, for one group of the history page."""
    drawing = new_figure(figsize=(5 * len(figures), 4.4), layout="constrained")
    axes = drawing.subplots(1, len(figures), squeeze=False)
    for panel, figure in zip(axes[0], figures, strict=True):
        draw_trend(panel, group, figure)
    return drawing
