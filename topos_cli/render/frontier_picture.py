"""The frontier as a picture: ms/step against training Δ, one labelled point per route and
budget, each with its interval, written as a standalone SVG. Beside each measured point a
cross marks the Δ its plan's step memory predicted, at the same ms/step, so prediction and
measurement are read together; under the legend a key names each point's budget, planned
bytes and recomputations.

A point is drawn filled ("told apart") only when the time judgement the verdict uses
(`time_judgement`, through `speed_ratio`) claims it faster or slower than every other
point; otherwise hollow, so the picture never draws as different what the verdict calls
inconclusive, within tolerance or no clear difference. Its labels cover no point and no
other label.

Drawn by hand rather than with a plotting library: a scatter of a dozen points needs
no dependency, and the grading parent stays light (no NumPy, nothing to import).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from topos_cli.render.label_placement import CHARACTER_EM, label_positions, point_boxes
from topos_cli.render.verdict_record import Drawable, verdict_record
from topos_cli.shared.units import MEBIBYTE

WIDTH, HEIGHT = 720, 520
#: Margins around the plot; the bottom one holds the x axis's title and the legend, so
#: the legend covers no point.
LEFT, RIGHT, TOP, BOTTOM = 80, 40, 50, 120

#: The colour of each kind of point: the reference, recorded, and remat's budgets.
COLOURS = {"engine": "#4e79a7", "recorded": "#59a14f", "remat": "#e15759"}


#: What the error bars are, said in the picture's legend.
INTERVAL_WORDS = "bars: lowest to highest repeat median (one repeat: the steps' quartiles)"


@dataclass(frozen=True)
class FrontierPoint:
    """One point of the picture: its label, its route, ms/step and training Δ in MiB, and
    the interval of its ms/step (`low`, `high`), when known."""

    label: str
    route: str
    milliseconds: float
    training_mebibytes: float
    low: float | None = None
    high: float | None = None
    #: Whether the time judgement tells it from every other point (None: not judged,
    #: then its interval is compared with the others', `indistinct`).
    told_apart: bool | None = None
    #: The training Δ its step memory predicted, in MiB (None: not predicted).
    predicted_mebibytes: float | None = None
    #: What the key says of it: its budget, planned bytes, recomputations (None: nothing).
    facts: str | None = None

    @property
    def interval(self) -> tuple[float, float]:
        """The time interval, or the point itself when none is known."""
        low = self.milliseconds if self.low is None else self.low
        high = self.milliseconds if self.high is None else self.high
        return min(low, self.milliseconds), max(high, self.milliseconds)


def frontier_points_of(drawn: Drawable | None, result: Any = None) -> list[FrontierPoint]:
    """The picture's points of a verdict: every route with both figures, its interval the
    range of its repeats' medians (the repeat is the unit of evidence), or with one
    repeat the quartiles of its steps; told apart as the verdict judged it
    (`JudgedVerdict.told_apart`). With the grade's
    result (`GradeResult`), each point also has its predicted Δ (its step memory, as
    `memory_prediction` says it) and its facts (`point_facts`)."""
    predicted: dict[str, int] = {}
    if result is not None:
        predicted = {
            entry.route: entry.predicted_training_bytes
            for entry in result.memory_prediction
            if entry.predicted_training_bytes is not None
        }
    points = []
    verdict = None if drawn is None else verdict_record(drawn)
    apart = {} if verdict is None else verdict.told_apart or {}
    for route in verdict.routes if verdict is not None else ():
        speed, memory = route.speed, route.memory
        if speed is None or memory is None or memory.training_delta_bytes is None:
            continue  # drawn with both figures alone
        distinct = apart.get(route.route)
        summary = speed.milliseconds_per_step
        medians = speed.repeat_medians_milliseconds
        if len(medians) >= 2:
            low, high = min(medians), max(medians)
        else:
            low, high = summary.lower_quartile, summary.upper_quartile
        forecast = predicted.get(route.route)
        points.append(
            FrontierPoint(
                route.route,
                route.route.split("@", 1)[0],
                summary.median,
                memory.training_delta_bytes / MEBIBYTE,
                low,
                high,
                distinct,
                None if forecast is None else forecast / MEBIBYTE,
                None if result is None else point_facts(result.routes.get(route.route)),
            )
        )
    return points


def point_facts(facts: Any) -> str | None:
    """What the key says of a point whose worker said `facts` (`RouteFacts`): a remat
    point's budget, planned bytes and recomputations; another route's planned bytes."""
    if facts is None:
        return None
    remat = facts.remat
    if remat is not None:
        return (
            f"budget {_mebibytes(remat.budget_bytes)} ({100 * remat.budget_fraction:.0f}%), "
            f"planned {_mebibytes(remat.planned_bytes)}, {remat.recomputations} recomputed "
            f"(+{100 * remat.extra_flops_fraction:.1f}% FLOPs)"
        )
    volume = facts.live_volume
    if volume is None or volume.plan_training_bytes is None:
        return None
    return f"no budget, planned {_mebibytes(volume.plan_training_bytes)}, nothing recomputed"


def _mebibytes(count: int) -> str:
    """Bytes as `3.91 MiB` (two decimals, so budgets a few KiB apart read apart), or
    `139.9 KiB` below a mebibyte."""
    if count < MEBIBYTE:
        return f"{count / 1024:.1f} KiB"
    return f"{count / MEBIBYTE:.2f} MiB"


def indistinct(points: Sequence[FrontierPoint]) -> list[bool]:
    """Per point, whether it is drawn hollow: not told apart (`FrontierPoint.told_apart`)
    or, for a point not judged, its time interval overlaps another point's."""
    flags = []
    for index, point in enumerate(points):
        if point.told_apart is not None:
            flags.append(not point.told_apart)
            continue
        low, high = point.interval
        flags.append(
            any(
                other_low <= high and low <= other_high
                for other_index, (other_low, other_high) in enumerate(p.interval for p in points)
                if other_index != index
            )
        )
    return flags


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round values spanning `[low, high]`."""
    span = high - low if high > low else 1.0
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    step = min((m * power for m in (1, 2, 5, 10) if m * power >= raw), default=power)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


@dataclass(frozen=True)
class _Scale:
    """An axis: figures from `low` to `high` placed linearly from pixel `start` to `end`."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        """The pixel of `value`."""
        return self.start + (value - self.low) / (self.high - self.low) * (self.end - self.start)

    def ticks(self) -> list[tuple[float, float]]:
        """Round figures along the axis (`_ticks`), each with its pixel."""
        return [(self(tick), tick) for tick in _ticks(self.low, self.high)]


def picture_height(points: Sequence[FrontierPoint]) -> int:
    """The picture's height: `HEIGHT`, and a line more under the legend for each point the
    key names (`FrontierPoint.facts`)."""
    keyed = sum(point.facts is not None for point in points)
    return HEIGHT + (KEY_LINE * keyed + KEY_GAP if keyed else 0)


#: The memory axis of topos's own frontier.
TRAINING_DELTA_AXIS = "training Δ (MiB): the memory a step adds"


def frontier_svg(
    points: Sequence[FrontierPoint], title: str, memory_axis: str | None = None
) -> str:
    """The SVG text of the frontier: x training Δ (MiB; `memory_axis` names another
    figure drawn there, a native step's tensors), y ms/step, each point with its
    interval as an error bar and a cross at the Δ its step memory predicted; a point
    noise cannot tell from another (`indistinct`) is hollow; remat's points joined in
    order of memory, so the curve shows what each megabyte costs in time; under the
    legend, each point's budget, planned bytes and recomputations."""
    if not points:
        points = [FrontierPoint("no points", "engine", 0.0, 0.0)]
    xs = [point.training_mebibytes for point in points]
    xs += [point.predicted_mebibytes for point in points if point.predicted_mebibytes is not None]
    ys = [point.interval[1] for point in points]
    x_low, x_high = 0.0, max(xs) * 1.1 or 1.0
    y_low, y_high = 0.0, max(ys) * 1.15 or 1.0
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    height = picture_height(points)

    x_of = _Scale(x_low, x_high, LEFT, LEFT + plot_width)
    y_of = _Scale(y_low, y_high, TOP + plot_height, TOP)  # y grows downward in SVG
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{TOP + plot_height}" x2="{LEFT + plot_width}" '
        f'y2="{TOP + plot_height}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_height}" stroke="black"/>',
    ]
    for x, tick in x_of.ticks():
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP + plot_height}" x2="{x:.1f}" '
            f'y2="{TOP + plot_height + 5}" stroke="black"/>'
            f'<text x="{x:.1f}" y="{TOP + plot_height + 18}" text-anchor="middle">{tick:g}</text>'
        )
    for y, tick in y_of.ticks():
        parts.append(
            f'<line x1="{LEFT - 5}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="black"/>'
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_width}" y2="{y:.1f}" '
            f'stroke="#dddddd"/>'
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_width / 2}" y="{TOP + plot_height + 38}" text-anchor="middle">'
        f"{escape(memory_axis or TRAINING_DELTA_AXIS)}</text>"
        f'<text x="20" y="{TOP + plot_height / 2}" text-anchor="middle" '
        f'transform="rotate(-90 20 {TOP + plot_height / 2})">ms/step (median)</text>'
    )
    remat = sorted(
        (point for point in points if point.route == "remat"),
        key=lambda point: point.training_mebibytes,
    )
    if len(remat) > 1:
        path = " ".join(
            f"{x_of(point.training_mebibytes):.1f},{y_of(point.milliseconds):.1f}"
            for point in remat
        )
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{COLOURS["remat"]}" '
            f'stroke-dasharray="4 3"/>'
        )
    legend, legend_box = _legend(TOP + plot_height + 54)
    key, key_box = _key(points, legend_box[3] + KEY_GAP)
    centres = [(x_of(point.training_mebibytes), y_of(point.milliseconds)) for point in points]
    crosses = [
        None if point.predicted_mebibytes is None else (x_of(point.predicted_mebibytes), y)
        for point, (_, y) in zip(points, centres, strict=True)
    ]
    bounds = (LEFT + 2, TOP, LEFT + plot_width, TOP + plot_height)
    labels = label_positions(
        centres,
        [point.label for point in points],
        bounds=bounds,
        avoid=[legend_box, key_box, *point_boxes([cross for cross in crosses if cross])],
    )
    hollow = indistinct(points)
    for point, (x, y), cross in zip(points, centres, crosses, strict=True):
        if cross is None:
            continue
        colour = COLOURS.get(point.route, "#333333")
        # The prediction first, under the measured point: a dotted line joins the two.
        parts.append(
            f'<line x1="{cross[0]:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y:.1f}" '
            f'stroke="{colour}" stroke-width="0.8" stroke-dasharray="1 2"/>'
            + _cross(cross[0], y, colour)
        )
    for point, (x, y), (label_x, label_y), open_mark in zip(
        points, centres, labels, hollow, strict=True
    ):
        colour = COLOURS.get(point.route, "#333333")
        if point.low is not None or point.high is not None:
            low, high = point.interval
            top, bottom = y_of(high), y_of(low)
            parts.append(
                f'<path d="M{x:.1f},{top:.1f} V{bottom:.1f} M{x - 4:.1f},{top:.1f} '
                f'H{x + 4:.1f} M{x - 4:.1f},{bottom:.1f} H{x + 4:.1f}" stroke="{colour}" '
                f'stroke-width="1.2" fill="none"/>'
            )
        fill = "white" if open_mark else colour
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}" stroke="{colour}" '
            f'stroke-width="1.6"/>'
            f'<text x="{label_x:.1f}" y="{label_y:.1f}">{escape(point.label)}</text>'
        )
    parts.extend(legend)
    parts.extend(key)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


#: Half a predicted point's cross, in pixels.
CROSS_REACH = 4


def _cross(x: float, y: float, colour: str, reach: float = CROSS_REACH) -> str:
    """A cross (×) at (x, y): where a point's predicted Δ lies (class `predicted`)."""
    return (
        f'<path class="predicted" d="M{x - reach:.1f},{y - reach:.1f} L{x + reach:.1f},'
        f"{y + reach:.1f} M{x - reach:.1f},{y + reach:.1f} L{x + reach:.1f},{y - reach:.1f}"
        f'" stroke="{colour}" stroke-width="1.6" fill="none"/>'
    )


#: The legend's lines: what a filled and a hollow point mean, the cross, and the bars.
LEGEND_LINES = (
    ("filled", "told apart from every other point: the verdict's time judgement claims it"),
    ("hollow", "not told apart from some point (inconclusive, within tolerance or unclear)"),
    ("cross", "predicted training Δ (the plan's step memory), at its point's ms/step"),
    ("bar", INTERVAL_WORDS),
)

#: The legend's font size, and its line height, in pixels.
LEGEND_FONT = 11
LEGEND_LINE = 15
#: The key's line height, and the gap between it and the legend, in pixels.
KEY_LINE = 15
KEY_GAP = 8


def _legend(top: float) -> tuple[list[str], tuple[float, float, float, float]]:
    """The legend's SVG parts, from `top` under the plot, and its box (left, top, right,
    bottom) for the labels to keep clear of."""
    width = max(len(words) for _, words in LEGEND_LINES) * LEGEND_FONT * CHARACTER_EM + 22
    left = LEFT
    right = left + width
    parts = [
        f'<rect x="{left - 4:.1f}" y="{top - 2:.1f}" width="{width + 8:.1f}" '
        f'height="{LEGEND_LINE * len(LEGEND_LINES) + 6}" fill="white" stroke="#cccccc"/>'
    ]
    for row, (kind, words) in enumerate(LEGEND_LINES):
        y = top + LEGEND_LINE * row + 11
        if kind == "bar":
            mark = (
                f'<path d="M{left + 6},{y - 9} V{y + 1} M{left + 2},{y - 9} H{left + 10} '
                f'M{left + 2},{y + 1} H{left + 10}" stroke="#555555" fill="none"/>'
            )
        elif kind == "cross":
            mark = _cross(left + 6, y - 4, "#555555", reach=3.5).replace('class="predicted" ', "")
        else:
            fill = "#555555" if kind == "filled" else "white"
            mark = (
                f'<circle cx="{left + 6}" cy="{y - 4}" r="4.5" fill="{fill}" '
                f'stroke="#555555" stroke-width="1.4"/>'
            )
        parts.append(
            mark + f'<text x="{left + 18:.1f}" y="{y}" font-size="{LEGEND_FONT}">'
            f"{escape(words)}</text>"
        )
    box = (left - 4, top - 2, right + 4, top + LEGEND_LINE * len(LEGEND_LINES) + 4)
    return parts, box


def _key(
    points: Sequence[FrontierPoint], top: float
) -> tuple[list[str], tuple[float, float, float, float]]:
    """The key's SVG parts, a line from `top` for each point with facts (its label, then
    its budget, planned bytes and recomputations), and its box for the labels to keep
    clear of."""
    parts = []
    keyed = [point for point in points if point.facts is not None]
    for row, point in enumerate(keyed):
        parts.append(
            f'<text x="{LEFT:.1f}" y="{top + KEY_LINE * row + 11}" font-size="{LEGEND_FONT}">'
            f"{escape(point.label)}: {escape(point.facts or '')}</text>"
        )
    return parts, (LEFT - 4, top - 2, WIDTH, top + KEY_LINE * len(keyed) + 4)
