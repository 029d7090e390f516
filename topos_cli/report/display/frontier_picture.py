"""The frontier as a picture: ms/step against training Δ, one labelled point per route and
budget, written as a standalone SVG.

Drawn by hand rather than with a plotting library: a scatter of a dozen points needs
no dependency, and the grading parent stays light (no NumPy, nothing to import).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 720, 460
LEFT, RIGHT, TOP, BOTTOM = 80, 40, 50, 60

#: The colour of each kind of point: the reference, recorded, and remat's budgets.
COLOURS = {"engine": "#4e79a7", "recorded": "#59a14f", "remat": "#e15759"}


@dataclass(frozen=True)
class FrontierPoint:
    """One point of the picture: its label, its route, ms/step and training Δ in MiB."""

    label: str
    route: str
    milliseconds: float
    training_mebibytes: float


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


def frontier_svg(points: Sequence[FrontierPoint], title: str) -> str:
    """The SVG text of the frontier: x training Δ (MiB), y ms/step; remat's points joined
    in order of memory, so the curve shows what each megabyte costs in time."""
    if not points:
        points = [FrontierPoint("no points", "engine", 0.0, 0.0)]
    xs = [point.training_mebibytes for point in points]
    ys = [point.milliseconds for point in points]
    x_low, x_high = 0.0, max(xs) * 1.1 or 1.0
    y_low, y_high = 0.0, max(ys) * 1.15 or 1.0
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    x_of = _Scale(x_low, x_high, LEFT, LEFT + plot_width)
    y_of = _Scale(y_low, y_high, TOP + plot_height, TOP)  # y grows downward in SVG
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
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
        f'<text x="{LEFT + plot_width / 2}" y="{HEIGHT - 15}" text-anchor="middle">'
        f"training Δ (MiB): the memory a step adds</text>"
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
    centres = [(x_of(point.training_mebibytes), y_of(point.milliseconds)) for point in points]
    labels = label_positions(centres, [point.label for point in points])
    for point, (x, y), (label_x, label_y) in zip(points, centres, labels, strict=True):
        colour = COLOURS.get(point.route, "#333333")
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"/>'
            f'<text x="{label_x:.1f}" y="{label_y:.1f}">{escape(point.label)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


#: A label's box, roughly, at the picture's 12-pixel font: its height and the width of
#: one character.
LABEL_HEIGHT = 14
CHARACTER_WIDTH = 7


def label_positions(
    centres: Sequence[tuple[float, float]], labels: Sequence[str]
) -> list[tuple[float, float]]:
    """Where each point's label starts (its text baseline): up and to the right of the
    point, else the first of below-right, up-left and below-left that covers no label
    already placed, else moved down from up-right a line at a time until it covers
    none, so points close together (remat at 50% and at its floor) stay readable."""
    placed: list[tuple[float, float, float]] = []  # left, right, baseline

    def covers(left: float, baseline: float, width: float) -> bool:
        return any(
            left < other_right
            and other_left < left + width
            and baseline - LABEL_HEIGHT < other_baseline
            and other_baseline - LABEL_HEIGHT < baseline
            for other_left, other_right, other_baseline in placed
        )

    positions = []
    for (x, y), label in zip(centres, labels, strict=True):
        width = CHARACTER_WIDTH * len(label)
        candidates = [
            (x + 8, y - 8),
            (x + 8, y + 20),
            (x - 8 - width, y - 8),
            (x - 8 - width, y + 20),
        ]
        free = [candidate for candidate in candidates if not covers(*candidate, width)]
        left, baseline = free[0] if free else candidates[0]
        while covers(left, baseline, width):
            baseline += LABEL_HEIGHT
        placed.append((left, left + width, baseline))
        positions.append((left, baseline))
    return positions
