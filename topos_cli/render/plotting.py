"""matplotlib for topos's pictures: loaded on first use (figures made without pyplot, so
no interactive backend is ever looked for), one look for every figure, one colour per
route, and figures out as SVG or PNG.

matplotlib imports NumPy, so nothing imports this module at the top: the
grading parent never loads it (a grade draws its report in a child process,
`topos_cli.render.report_html`), and `topos --help` stays fast. Drawing
helpers for one kind of picture live in modules named for what they draw
(`memory_figure`, `step_time_figure`, `loss_figure`, `trend_figure`).
"""

from __future__ import annotations

import io
from typing import Any

#: The colour of each built-in route, the same in every picture (matplotlib's tab10).
ROUTE_COLOURS = {"engine": "#1f77b4", "recorded": "#ff7f0e", "remat": "#2ca02c"}

#: Colours for routes of other names, in order of appearance.
OTHER_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#d62728")

#: How each repeat of a route is drawn: the first solid, then dashed, dotted...
REPEAT_STYLES = ("-", "--", ":", "-.")

#: The look of every figure: readable at a README's width, text kept as text in SVG.
STYLE = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.framealpha": 0.9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # Text stays text in the SVG: smaller, searchable, and readable by tests.
    "svg.fonttype": "none",
    # Every string is drawn as written, never parsed as mathtext: route names, commits,
    # data folders and workload names are the user's, and `a$\foo$b` or `price_$5_$10`
    # made drawing fail with a parse error. This is the one place all text a figure
    # shows passes (titles, labels, legends, annotations, tick labels, whoever adds
    # them), so no call site can forget it; topos's own labels use no mathtext.
    "text.parse_math": False,
    "figure.dpi": 100,
}


def new_figure(**options: Any) -> Any:
    """A styled matplotlib `Figure` (its keyword `options`, such as `figsize` and
    `layout`); imports matplotlib on first call. pyplot is never loaded: its figure
    manager and backend machinery are of no use to a picture saved to a file, and cost
    a report a fifth of a second to import."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(STYLE)
    return Figure(**options)


def route_colour(route: str, routes: tuple[str, ...] | list[str] = ()) -> str:
    """The colour of `route`: its own for a built-in route, else by its place in `routes`."""
    if route in ROUTE_COLOURS:
        return ROUTE_COLOURS[route]
    others = [name for name in routes if name not in ROUTE_COLOURS]
    index = others.index(route) if route in others else len(others)
    return OTHER_COLOURS[index % len(OTHER_COLOURS)]


def figure_svg(figure: Any, name: str) -> str:
    """The figure as an SVG element (no XML prologue), ready to inline in HTML.

    `name` salts the ids matplotlib gives clip paths, so several figures can
    share one page, and the same figure gives the same text every time.
    """
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"topos-{name}"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    start = text.find("<svg")
    return text[start:] if start >= 0 else text


def figure_png(figure: Any, dpi: int = 100) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def mebibytes(count: float) -> float:
    """Bytes in MiB, the unit every memory axis is drawn in."""
    return count / (1024 * 1024)


def note_nothing_to_draw(axes: Any, message: str) -> None:
    """Says on empty axes why there is nothing to draw, rather than leave them blank."""
    axes.text(
        0.5,
        0.5,
        message,
        transform=axes.transAxes,
        ha="center",
        va="center",
        wrap=True,
        color="#555555",
    )
    axes.set_xticks([])
    axes.set_yticks([])


def legend_below(columns: int = 1) -> dict[str, Any]:
    """Keyword arguments that put an axes' legend under it, outside the plot, where it
    covers no line (the constrained layout makes room for it)."""
    return {
        "loc": "upper center",
        "bbox_to_anchor": (0.5, -0.16),
        "ncols": columns,
        "fontsize": 8,
        "frameon": False,
    }


def route_legend(
    axes: Any,
    routes: tuple[str, ...] | list[str],
    repeats: list[int],
    extra: list[tuple[Any, str]] | None = None,
) -> None:
    """One legend entry per route (its colour) and one per repeat (its line style), not
    one per run: eight routes of two repeats are ten entries, not sixteen. It stands
    right of the axes, outside, so it covers no line; `extra` adds (handle, label) pairs."""
    from matplotlib.lines import Line2D

    handles: list[Any] = [
        Line2D([], [], color=route_colour(r, routes), linewidth=2) for r in routes
    ]
    labels = list(routes)
    distinct = sorted(set(repeats))
    if len(distinct) > 1:
        for repeat in distinct:
            style = REPEAT_STYLES[repeat % len(REPEAT_STYLES)]
            handles.append(Line2D([], [], color="#555555", linestyle=style))
            labels.append(f"repeat {repeat + 1}")
    for handle, label in extra or []:
        handles.append(handle)
        labels.append(label)
    legend_beside(axes, handles, labels)


def legend_beside(axes: Any, handles: list[Any], labels: list[str]) -> None:
    """The legend right of the axes, outside them: with several routes a legend inside
    covers their lines."""
    axes.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        frameon=False,
        borderaxespad=0.0,
    )
