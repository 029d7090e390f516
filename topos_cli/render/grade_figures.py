"""The figures of one grade, laid out: three for the HTML report (memory, step times, loss)
and one image of all the main panels (`--png`, for a README or a pull request).

Each panel is drawn by the module named for it; this module only arranges
them. matplotlib is loaded by the first call, never on import.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from topos_cli.render.loss_figure import draw_loss_curves, loss_title
from topos_cli.render.memory_figure import draw_memory_timeline, draw_training_delta_bars
from topos_cli.render.plotting import figure_png, figure_svg, new_figure
from topos_cli.render.report_contents import ReportContents
from topos_cli.render.side_by_side import draw_side_by_side
from topos_cli.render.step_time_figure import (
    draw_step_time_distribution,
    draw_time_per_step,
)

#: A panel: draws one part of the report on the axes it is given.
Panel = Callable[[Any, ReportContents], None]

#: The memory panels (RSS over time, the training Δ) and the step-time panels (the
#: distribution, every step's time), each a row of its own figure and of the overview.
MEMORY_PANELS = (draw_memory_timeline, draw_training_delta_bars)
STEP_TIME_PANELS = (draw_step_time_distribution, draw_time_per_step)


def _draw_row(
    holder: Any, contents: ReportContents, panels: Sequence[Panel], widths: Sequence[float]
) -> None:
    """Draws `panels` left to right, one row of `holder` (a figure or a subfigure)."""
    row = holder.subplots(1, len(panels), squeeze=False, gridspec_kw={"width_ratios": widths})
    for axes, draw in zip(row[0], panels, strict=True):
        draw(axes, contents)


def _row_figure(
    contents: ReportContents, height: float, panels: Sequence[Panel], widths: Sequence[float]
) -> Any:
    """A figure of one row of panels, as wide as the report."""
    figure = new_figure(figsize=(12, height), layout="constrained")
    _draw_row(figure, contents, panels, widths)
    return figure


def memory_figure(contents: ReportContents) -> Any:
    """RSS over time beside the training Δ, measured and predicted."""
    return _row_figure(contents, 4.6, MEMORY_PANELS, [3, 1])


def step_time_figure(contents: ReportContents) -> Any:
    """The step-time distribution per route beside every step's time across the run."""
    return _row_figure(contents, 4.2, STEP_TIME_PANELS, [1, 2])


def loss_figure(contents: ReportContents) -> Any:
    """Every run's loss curve, the first divergence marked."""
    return _row_figure(contents, 4.0, [draw_loss_curves], [1])


def report_svgs(contents: ReportContents) -> dict[str, str]:
    """The report's figures as inline SVG elements, by name: memory, steps, loss (drawn
    side by side where this process may fork, see `side_by_side`)."""
    # The quickest first: it is drawn here while the forks draw the other two.
    return draw_side_by_side(
        {
            "loss": lambda: figure_svg(loss_figure(contents), "loss"),
            "memory": lambda: figure_svg(memory_figure(contents), "memory"),
            "steps": lambda: figure_svg(step_time_figure(contents), "steps"),
        }
    )


#: How many lines of the verdict's sentence the overview's title holds.
TITLE_LINES = 3


def overview_figure(contents: ReportContents) -> Any:
    """All main panels in one image, titled with the verdict's sentence and the grade's facts."""
    figure = new_figure(figsize=(15, 9.2), layout="constrained")
    # Two rows as subfigures: each lays out its own panels, so one row's wide labels
    # cannot squeeze the other's.
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1])
    _draw_row(top, contents, MEMORY_PANELS, [3, 1])
    _draw_row(bottom, contents, [*STEP_TIME_PANELS, draw_loss_curves], [2, 3, 3])
    figure.suptitle(overview_title(contents), fontsize=11)
    return figure


def overview_title(contents: ReportContents) -> str:
    """The overview's title: the bits as the loss panel judges them (peers included),
    then at most two more lines of the verdict's sentence, then the grade's facts."""
    title = contents.summary or f"{contents.workload}: no verdict"
    facts = " · ".join(line for line in contents.circumstances[:2])
    # Many routes make a long sentence: at most three lines in all, so the panels keep
    # their room (the page's table and sentence hold it all). The bits come first, so a
    # cut sentence never hides a divergence.
    lines = textwrap.wrap(loss_title(contents).removeprefix("Loss: "), 150)[:1]
    lines += textwrap.wrap(title, 150)
    if len(lines) > TITLE_LINES:
        lines = [
            *lines[: TITLE_LINES - 1],
            textwrap.shorten(" ".join(lines[TITLE_LINES - 1 :]), 146, placeholder=" …"),
        ]
    return "\n".join([*lines, textwrap.fill(facts, 170)])


def overview_png(contents: ReportContents) -> bytes:
    """`overview_figure` as PNG bytes."""
    return figure_png(overview_figure(contents))
