"""The report's frontier section: a frontier's result drawn as `topos frontier` drew and
printed it, its picture and table (with PyTorch's partitioner's estimate for a native
step's compiled points); nothing for a grade's result."""

from __future__ import annotations

from html import escape

from topos_cli.render.html_page import figure, table
from topos_cli.render.report_contents import ReportContents
from topos_cli.result.repeat import Repeat


def frontier_section(contents: ReportContents, svg: str | None = None) -> str:
    """A frontier's result: its picture (drawn here unless given) and its table, as
    `topos frontier` drew and printed them; nothing for a grade's."""
    if contents.result.frontier is None:
        return ""
    if any(_is_native_repeat(repeat) for repeat in contents.result.repeats):
        return _native_frontier_section(contents, svg)
    from topos_cli.render.frontier_picture import frontier_points_of, frontier_svg
    from topos_cli.render.frontier_table import HEADERS, frontier_rows, unbounded_line

    if svg is None:
        title = f"topos frontier: {contents.workload}, ms/step against training Δ"
        svg = frontier_svg(frontier_points_of(contents.verdict, contents.result), title)
    rows = frontier_rows(contents.result, contents.verdict)
    rows += [
        [entry.point, "below the floor", *[""] * (len(HEADERS) - 2)]
        for entry in contents.result.frontier.refused
    ]
    unbounded = unbounded_line(contents.result)
    return "\n".join(
        [
            "<h2>Frontier</h2>",
            figure(
                svg,
                "Each point's median ms/step against its training Δ, its bars the range of "
                "its repeats' medians; filled where the verdict's time judgement tells it "
                "from every other point.",
                "frontier-figure",
            ),
            table(HEADERS, rows, numeric_columns=range(2, 9), table_id="frontier"),
            f"<p>{escape(unbounded)}</p>" if unbounded else "",
        ]
    )


def _is_native_repeat(repeat: Repeat) -> bool:
    """Whether `run` is a route of a native workload (a PyTorch or JAX step)."""
    ready = repeat.facts.ready
    return ready is not None and ready.native is not None


def _native_frontier_section(contents: ReportContents, svg: str | None = None) -> str:
    """A native frontier's result: its picture, flagged points marked, and its table with
    PyTorch's partitioner's estimate beside each compiled point, as `topos frontier`
    drew and printed them."""
    from topos_cli.render.frontier_picture import frontier_svg
    from topos_cli.render.native_frontier_point import (
        native_frontier_points,
        picture_axis,
        picture_points,
    )
    from topos_cli.render.native_frontier_table import (
        native_frontier_headers,
        native_frontier_notes,
        native_frontier_rows,
    )

    tolerance = contents.result.settings.tolerance
    points = native_frontier_points(
        contents.result.repeats,
        contents.verdict,
        0.05 if tolerance is None else tolerance.memory_tolerance,
    )
    if svg is None:
        axis = picture_axis(points)
        against = "step tensors" if axis else "training Δ"
        title = f"topos frontier: {contents.workload}, ms/step against {against}"
        svg = frontier_svg(picture_points(points, contents.verdict), title, axis)
    notes = "".join(f"<p>{escape(line)}</p>" for line in native_frontier_notes(points))
    headers = native_frontier_headers(points)
    return "\n".join(
        [
            "<h2>Frontier</h2>",
            figure(
                svg,
                "Each route's median ms/step against its training Δ, its bars the range of "
                "its repeats' medians; a point flagged for its memory is marked ⚠.",
                "frontier-figure",
            ),
            table(
                headers,
                native_frontier_rows(points),
                # The figures: every column but the point, the estimate's words and the flag.
                numeric_columns=[
                    index
                    for index, name in enumerate(headers)
                    if name not in ("point", "flag") and not name.startswith("PyTorch")
                ],
                table_id="frontier",
            ),
            notes,
        ]
    )
