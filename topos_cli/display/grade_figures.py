"""The figures of one grade, laid out: three for the HTML report (memory, step times, loss)
and one image of all the main panels (`--png`, for a README or a pull request).

Each panel is drawn by the module named for it; this module only arranges
them. matplotlib is loaded by the first call, never on import.
"""

from __future__ import annotations

import textwrap
from typing import Any

from topos_cli.display.loss_figure import draw_loss_curves
from topos_cli.display.memory_figure import draw_memory_timeline, draw_training_delta_bars
from topos_cli.display.plotting import figure_png, figure_svg, pyplot
from topos_cli.display.report_contents import ReportContents
from topos_cli.display.step_time_figure import draw_step_time_distribution, draw_time_per_step


def memory_figure(contents: ReportContents) -> Any:
    """RSS over time beside the training Δ, measured and predicted."""
    plt = pyplot()
    figure, (timeline, bars) = plt.subplots(
        1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [3, 1]}, layout="constrained"
    )
    draw_memory_timeline(timeline, contents)
    draw_training_delta_bars(bars, contents)
    return figure


def step_time_figure(contents: ReportContents) -> Any:
    """The step-time distribution per route beside every step's time across the run."""
    plt = pyplot()
    figure, (distribution, across) = plt.subplots(
        1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]}, layout="constrained"
    )
    draw_step_time_distribution(distribution, contents)
    draw_time_per_step(across, contents)
    return figure


def loss_figure(contents: ReportContents) -> Any:
    """Every run's loss curve, the first divergence marked."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(12, 4.0), layout="constrained")
    draw_loss_curves(axes, contents)
    return figure


def report_svgs(contents: ReportContents) -> dict[str, str]:
    """The report's figures as inline SVG elements, by name: memory, steps, loss."""
    return {
        "memory": figure_svg(memory_figure(contents), "memory"),
        "steps": figure_svg(step_time_figure(contents), "steps"),
        "loss": figure_svg(loss_figure(contents), "loss"),
    }


def overview_figure(contents: ReportContents) -> Any:
    """All main panels in one image, titled with the verdict's sentence and the grade's facts."""
    plt = pyplot()
    figure = plt.figure(figsize=(15, 9.2), layout="constrained")
    # Two rows as subfigures: each lays out its own panels, so one row's wide labels
    # cannot squeeze the other's.
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1])
    timeline, bars = top.subplots(1, 2, gridspec_kw={"width_ratios": [3, 1]})
    draw_memory_timeline(timeline, contents)
    draw_training_delta_bars(bars, contents)
    distribution, across, loss = bottom.subplots(1, 3, gridspec_kw={"width_ratios": [2, 3, 3]})
    draw_step_time_distribution(distribution, contents)
    draw_time_per_step(across, contents)
    draw_loss_curves(loss, contents)
    title = contents.summary or f"{contents.workload}: no verdict"
    facts = " · ".join(line for line in contents.circumstances[:2])
    figure.suptitle(
        "\n".join([textwrap.fill(title, 150), textwrap.fill(facts, 170)]),
        fontsize=11,
    )
    return figure


def overview_png(contents: ReportContents) -> bytes:
    """`overview_figure` as PNG bytes."""
    return figure_png(overview_figure(contents))
