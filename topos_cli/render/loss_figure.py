"""The loss picture of a grade: every run's loss at every step, the first divergence marked.

Bit-identical routes draw one curve over another; the reference run is drawn
wide and the others narrower and dashed on top, so coinciding curves still
show every route. When parity breaks, the step where the runs part is marked
with both losses; a loss that turned NaN or infinite is marked where it did.
"""

from __future__ import annotations

import math
from typing import Any

from topos_cli.render.plotting import note_nothing_to_draw, route_colour, route_legend
from topos_cli.render.report_contents import ReportContents
from topos_cli.render.verdict_record import verdict_record

#: Line styles by the order runs are drawn: the first wide and solid, the rest on top.
STYLES = (("-", 3.2), ("--", 1.4), (":", 1.6), ("-.", 1.2))


def loss_title(contents: ReportContents) -> str:
    """The loss panel's title: whether topos's curves coincide or where they part, then
    each peer's agreement as its judged cell says it (a peer that diverged is named
    here too, so the panel never reads "coincide" beside a divergence)."""
    if contents.verdict is None:
        return "Loss"
    verdict = verdict_record(contents.verdict)
    parity = verdict.parity
    if contents.divergence is not None:
        title = f"Loss: parity broken at step {contents.divergence.step}"
    elif parity.status == "bit-identical":
        title = f"Loss: bit-identical over {parity.steps} steps"
        if not verdict.agreements:
            title += ", the curves coincide"
    else:
        title = f"Loss: parity {parity.status}"
    peers = [f"{agreement.route} {agreement.cell}" for agreement in verdict.agreements]
    return "; ".join([title, *peers])


def draw_loss_curves(axes: Any, contents: ReportContents) -> None:
    """Every run's loss per step, overlaid; the first divergence and non-finite losses marked."""
    repeats = [repeat for repeat in contents.repeats if repeat.losses]
    if not repeats:
        note_nothing_to_draw(axes, "no losses recorded")
        return
    finite = [value for repeat in repeats for value in repeat.losses if math.isfinite(value)]
    for order, repeat in enumerate(repeats):
        style, width = STYLES[min(order, len(STYLES) - 1)]
        colour = route_colour(repeat.route, contents.routes)
        axes.plot(
            range(len(repeat.losses)),
            [value if math.isfinite(value) else math.nan for value in repeat.losses],
            color=colour,
            linestyle=style,
            linewidth=width,
            alpha=0.55 if order == 0 else 1.0,
            gid=f"loss-{repeat.route}-{repeat.repeat}",
        )
        bad = next(
            (step for step, value in enumerate(repeat.losses) if not math.isfinite(value)), None
        )
        if bad is not None and finite:
            axes.plot(
                [bad], [max(finite)], marker="X", color=colour, markersize=9, linestyle="none"
            )
            axes.annotate(
                f"{repeat.label}: loss {repeat.losses[bad]} at step {bad}",
                (bad, max(finite)),
                xytext=(6, -4),
                textcoords="offset points",
                fontsize=8,
                color=colour,
                va="top",
            )
    divergence = contents.divergence
    extra = []
    if divergence is not None:
        line = axes.axvline(divergence.step, color="#d62728", linewidth=1.4)
        extra.append((line, "first divergence"))
        text = divergence.describe()
        # The description is long; break it before the second run's value.
        text = text.replace(" vs ", "\nvs ", 1)
        # In the top right corner, inside the axes, rather than beside the line: beside a
        # late step it would run out of the axes into the legend. Losses fall, so the
        # corner is where the curves are not.
        axes.text(
            0.98,
            0.97,
            text,
            transform=axes.transAxes,
            fontsize=8,
            color="#d62728",
            ha="right",
            va="top",
            gid="divergence",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85},
        )
    axes.set_xlabel("step")
    axes.set_ylabel("training loss (cross-entropy)")
    axes.set_title(loss_title(contents))
    # A route per colour (repeats coincide when parity holds), outside the axes.
    route_legend(axes, contents.routes, [], extra)
