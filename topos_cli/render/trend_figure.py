"""The trend of one figure across a group of grades: a line per route, grades in time order
along the axis (labelled with their commit and date), significant changes marked.

A mark is drawn where `compare` calls the change from the grade before a
significant regression (a red triangle pointing up) or improvement (a green
one pointing down); changes within tolerance or not significant are unmarked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from topos_cli.judge.history import COUNTED, FIGURES, STEP_TENSORS, HistoryGroup
from topos_cli.render.plotting import (
    mebibytes,
    new_figure,
    note_nothing_to_draw,
    route_colour,
)

#: Each figure's axis label, with its unit.
AXIS_LABELS = {
    "ms/step": "median time per step (ms)",
    "peak RSS": "peak RSS (MiB)",
    "training delta": "training Δ: peak − ready RSS (MiB)",
    STEP_TENSORS: "step tensors: the step's own tensors at their peak (MiB)",
    COUNTED: "instructions per step (millions; flat where the code did not change)",
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


def draw_trend(
    axes: Any, group: HistoryGroup, figure: str, links: Sequence[str | None] | None = None
) -> None:
    """One figure's values per route across the group's grades, each with its spread (an
    error bar: the lowest and highest over its repeats); significant changes marked; a
    point links to its grade's report (`links`, per grade) in SVG."""
    routes = group.routes
    drawn = False
    marked: set[str] = set()
    scale = (
        (lambda value: value)
        if figure == "ms/step"
        else (lambda value: value / 1e6)
        if figure == COUNTED
        else mebibytes
    )
    # Routes side by side around each grade, so their bars do not hide one another.
    offsets = {
        route: (i - (len(routes) - 1) / 2) * min(0.08, 0.6 / len(routes))
        for i, route in enumerate(routes)
    }
    for route in routes:
        xs, ys, lows, highs, urls = [], [], [], [], []
        for index, point in enumerate(group.points):
            value = point.values.get((route, figure))
            if value is None:
                continue
            y = scale(value)
            low, high = point.spreads.get((route, figure), (value, value))
            xs.append(index + offsets[route])
            ys.append(y)
            lows.append(y - min(scale(low), y))
            highs.append(max(scale(high), y) - y)
            urls.append(links[index] if links is not None else None)
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
            colour = route_colour(route, routes)
            axes.errorbar(
                xs,
                ys,
                yerr=[lows, highs],
                marker="o",
                color=colour,
                linewidth=1.6,
                markersize=5,
                capsize=3,
                label=route,
                gid=f"trend-{route}",
            )
            if any(urls):
                # An invisible marker per point carrying its link: SVG keeps it as <a>.
                dots = axes.scatter(xs, ys, s=60, alpha=0.0)
                dots.set_urls(urls)
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


def trend_figure(
    group: HistoryGroup,
    figures: tuple[str, ...] = FIGURES,
    links: Sequence[str | None] | None = None,
) -> Any:
    """A plot per figure, side by side, for one group of the history page, and one legend
    under them all (a legend per plot would cover its lines); `links` per grade."""
    drawing = new_figure(figsize=(5 * len(figures), 4.6), layout="constrained")
    axes = drawing.subplots(1, len(figures), squeeze=False)
    for panel, figure in zip(axes[0], figures, strict=True):
        draw_trend(panel, group, figure, links)
    handles, labels = {}, []
    for panel in axes[0]:
        for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
            if label not in handles:
                handles[label] = handle
                labels.append(label)
    if labels:
        drawing.legend(
            [handles[label] for label in labels],
            labels,
            loc="outside lower center",
            ncols=min(len(labels), 5),
            fontsize=8,
            frameon=False,
        )
    return drawing
