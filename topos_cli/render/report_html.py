"""The report of one grade: a self-contained HTML page (figures as inline SVG) and, on
request, one PNG of the main panels.

`topos report` calls `write_report`; `topos grade` runs this module as a
short child process once its result is written,

    python -m topos_cli.render.report_html RESULT.json --html REPORT.html

so the grading parent never loads NumPy or matplotlib, and a report that
fails to draw cannot touch the result or the grade's exit status. The grade starts
the child early, `--when-told`: it loads matplotlib while the workers load, says
`loaded` on standard output, and waits for one JSON line on standard input naming
the result and the page (`report_child.ReportChild`); an empty input ends it. The child
exits 0 when it wrote everything asked, 2 (one line) when the file is no
topos result, 1 (one line) when drawing failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from topos_cli.judge.statistics import median
from topos_cli.render.html_page import bullet_list, escape, figure, missing_box, page, table
from topos_cli.render.report_contents import ReportContents, gather_report_contents
from topos_cli.render.report_frontier import frontier_section
from topos_cli.render.verdict_table import verdict_labels, verdict_notes, verdict_rows
from topos_cli.result.lenient_result import read_result_leniently
from topos_cli.result.result_file import default_report_path
from topos_cli.shared.errors import ResultFileError, ToposError
from topos_cli.shared.exit_without_teardown import exit_without_teardown
from topos_cli.shared.output_path import check_outputs, write_output
from topos_cli.shared.units import DASH, format_milliseconds, mebibytes_cell

MEMORY_HEADERS = (
    "route",
    "runs",
    "RSS at ready MiB",
    "peak RSS MiB",
    "predicted peak MiB",
    "training Δ MiB",
    "predicted training Δ MiB",
    "measured / predicted",
)

STEP_HEADERS = (
    "route",
    "measured steps",
    "median ms",
    "IQR ms",
    "fastest ms",
    "slowest ms",
    "warm-up step ms",
)

LOSS_HEADERS = ("run", "status", "steps", "first loss", "final loss")
COUNT_HEADERS = (
    "route",
    "status",
    "instructions/step",
    "against the reference",
    "spread",
    "counted steps",
    "BLAS kernel",
)


def _median_of(values: Sequence[int | None]) -> int | None:
    """The median of the known values, or `None`."""
    known = [value for value in values if value is not None]
    return int(median(known)) if known else None


#: The training Δ's header for a native step's routes: what it is there.
HEAP_GROWTH_HEADER = "heap Δ MiB (growth beyond warm-up)"


def shows_heap_growth(contents: ReportContents) -> bool:
    """Whether the result's routes are a native step's that measured step tensors: their
    training Δ is then only the heap's growth (`topos.native.step_tensors`)."""
    return any(
        repeat.ready is not None
        and repeat.ready.native is not None
        and repeat.ready.native.step_tensor_bytes is not None
        for repeat in contents.result.repeats
    )


def memory_headers(contents: ReportContents) -> tuple[str, ...]:
    """`MEMORY_HEADERS`, the training Δ said as heap growth for a native step's routes."""
    if not shows_heap_growth(contents):
        return MEMORY_HEADERS
    return tuple(
        HEAP_GROWTH_HEADER if name == "training Δ MiB" else name for name in MEMORY_HEADERS
    )


def memory_rows(contents: ReportContents) -> list[list[str]]:
    """Per route the memory figures the picture marks, in `MEMORY_HEADERS` order."""
    rows = []
    for route in contents.routes:
        every = contents.repeats_of(route)
        repeats = [repeat for repeat in every if repeat.status == "ok"] or every
        ready = _median_of([repeat.ready_rss_bytes for repeat in repeats])
        peak = _median_of([repeat.peak_rss_bytes for repeat in repeats])
        delta = _median_of([repeat.training_delta_bytes for repeat in repeats])
        predicted = contents.predicted_training_bytes.get(route)
        predicted_peak = None if ready is None or predicted is None else ready + predicted
        ratio = DASH if delta is None or not predicted else f"{delta / predicted:.2f}x"
        rows.append(
            [
                route,
                str(len(repeats)),
                mebibytes_cell(ready),
                mebibytes_cell(peak),
                mebibytes_cell(predicted_peak),
                mebibytes_cell(delta),
                mebibytes_cell(predicted),
                ratio,
            ]
        )
    return rows


def step_rows(contents: ReportContents) -> list[list[str]]:
    """Per route the step-time figures of the verdict, in `STEP_HEADERS` order."""
    rows = []
    for route in contents.routes:
        speed = None
        if contents.verdict is not None:
            speed = contents.verdict.route(route).speed
        warm_ups = [
            repeat.warm_up_milliseconds
            for repeat in contents.repeats_of(route)
            if repeat.warm_up_milliseconds is not None
        ]
        warm_up = DASH if not warm_ups else format_milliseconds(median(warm_ups))
        if speed is None:
            rows.append([route, "0", DASH, DASH, DASH, DASH, warm_up])
            continue
        summary = speed.milliseconds_per_step
        rows.append(
            [
                route,
                str(summary.count),
                format_milliseconds(summary.median),
                format_milliseconds(summary.interquartile_range, summary.median),
                format_milliseconds(summary.minimum),
                format_milliseconds(summary.maximum),
                warm_up,
            ]
        )
    return rows


def loss_rows(contents: ReportContents) -> list[list[str]]:
    """Per run its first and final loss, in `LOSS_HEADERS` order."""
    return [
        [
            repeat.label,
            repeat.status,
            str(len(repeat.losses)),
            f"{repeat.losses[0]:.6f}" if repeat.losses else DASH,
            f"{repeat.losses[-1]:.6f}" if repeat.losses else DASH,
        ]
        for repeat in contents.repeats
    ]


def count_rows(contents: ReportContents) -> list[list[str]]:
    """Per route its counted work (`--measure instructions`), in `COUNT_HEADERS` order:
    the median instructions a judged step executed, and that over the reference's."""
    counts = list(contents.result.counts or [])
    reference = contents.verdict.reference if contents.verdict is not None else None
    base = next((count for count in counts if count.route == reference), None)
    rows = []
    for count in counts:
        middle = count.median if count.status == "counted" else None
        against = DASH
        if middle is not None and base is not None and base is not count and base.median:
            against = f"{middle / base.median:.3f}x"
        elif count is base:
            against = "reference"
        spread = count.spread
        rows.append(
            [
                count.route,
                count.status if count.detail is None else f"{count.status}: {count.detail}",
                DASH if middle is None else f"{middle / 1e6:.3f} M",
                against,
                DASH if spread is None or middle is None else f"{spread:.2%}",
                str(len(count.judged_steps)) if middle is not None else DASH,
                count.kernels[0] or DASH,
            ]
        )
    return rows


def _counts_section(contents: ReportContents) -> str:
    """The counted work of each route, as a table with the lines the grade printed; empty
    when the grade did not count (`--measure instructions`)."""
    if not contents.result.counts:
        return ""
    from topos_cli.judge.count_judgement import BLIND_SPOTS

    return "\n".join(
        [
            "<h2>Counted work</h2>",
            table(
                COUNT_HEADERS, count_rows(contents), numeric_columns=(2, 3, 4, 5), table_id="counts"
            ),
            bullet_list([BLIND_SPOTS], "count-notes"),
        ]
    )


def _verdict_section(contents: ReportContents) -> str:
    """The summary sentence, the verdict table and its notes, as the terminal prints them."""
    verdict = contents.verdict
    exit_status = contents.result.exit_status
    good = (
        exit_status == 0
        if exit_status is not None
        else (verdict is not None and verdict.exit_status == 0)
    )
    parts = []
    if contents.summary:
        parts.append(
            f'<p class="summary {"good" if good else "bad"}" id="summary">'
            f"{escape(contents.summary)}</p>"
        )
    if verdict is not None:
        parts.append(
            table(
                verdict_labels(verdict),  # a page has room for the headers said in full
                verdict_rows(verdict),
                numeric_columns=(2, 3, 5, 6),
                table_id="verdict",
            )
        )
        notes = _nested_notes(verdict_notes(verdict))
        if notes:
            parts.append(bullet_list(notes, "notes"))
    else:
        parts.append("<p>No verdict: no run of any route was recorded.</p>")
    return "\n".join(parts)


def _nested_notes(notes: Sequence[str]) -> list[str]:
    """The verdict's notes, an indented line (a remedy, a failure's detail) joined to the
    line above it, as the terminal shows them."""
    joined: list[str] = []
    for note in notes:
        if note.startswith("    ") and joined:
            joined[-1] += " — " + note.strip()
        else:
            joined.append(note.strip())
    return joined


def render_report_html(contents: ReportContents, svgs: dict[str, str] | None = None) -> str:
    """The whole report page; `svgs` (by name: memory, steps, loss) are drawn if not given."""
    if svgs is None:
        from topos_cli.render.grade_figures import report_svgs

        svgs = report_svgs(contents)
    # A frontier's result (a grade of remat at several budgets) is titled as its command.
    command = "frontier" if contents.result.frontier is not None else "grade"
    title = f"topos {command}: {contents.workload}"
    created = contents.result.created or "an unknown time"
    body = [
        f"<h1>{escape(title)}</h1>",
        f"<p>Graded {escape(created)}; from <code>{escape(contents.source)}</code>.</p>",
        missing_box(contents.missing, "What this report could not show"),
        _verdict_section(contents),
        bullet_list(list(contents.circumstances), "facts"),
        _counts_section(contents),
        frontier_section(contents, svgs.get("frontier")),
        "<h2>Memory</h2>",
        figure(
            svgs["memory"],
            "Left: each route's resident memory (RSS, sampled every few ms, the highest sample "
            "per slice) against time since it was ready; dashed, the measured peak "
            f"({contents.peak_words}); "
            "dotted, the peak its plan predicts (RSS at ready plus the planned training bytes). "
            "Right: the training Δ (peak minus RSS at ready), measured and predicted."
            + (
                " For a PyTorch or JAX step the training Δ is only the heap's growth beyond "
                "the warm-up steps' (freed tensors stay in glibc's heap); its memory is its "
                "step tensors, in the verdict's table."
                if shows_heap_growth(contents)
                else ""
            ),
            "memory-figure",
        ),
        table(
            memory_headers(contents),
            memory_rows(contents),
            numeric_columns=range(1, 8),
            table_id="memory",
        ),
        "<h2>Step times</h2>",
        figure(
            svgs["steps"],
            "Left: each route's measured step times (box: quartiles and median; whiskers: 1.5 "
            "IQR; a dot per step). Right: every step's time across the run. Warm-up is marked: "
            "the step thrown away before ready (triangle) and the leading steps the median "
            "leaves out (crosses, shaded band); one beyond the axis is drawn at its top with "
            "its time.",
            "steps-figure",
        ),
        table(STEP_HEADERS, step_rows(contents), numeric_columns=range(1, 7), table_id="steps"),
        "<h2>Loss</h2>",
        figure(
            svgs["loss"],
            "The loss of every run at every step. Runs that agree bit for bit coincide: the "
            "first is drawn wide, the others dashed on top. The first divergence, if any, is "
            "marked in red.",
            "loss-figure",
        ),
        table(LOSS_HEADERS, loss_rows(contents), numeric_columns=(2, 3, 4), table_id="losses"),
        f"<footer>{escape(_footer(contents))}</footer>",
    ]
    return page(title, "\n".join(part for part in body if part))


def _footer(contents: ReportContents) -> str:
    """Which topos wrote the result, and which drew this page."""
    version = contents.result.tool.version
    return (
        f"Result written by topos {version or '(version unknown)'}; schema "
        f"{contents.result.schema}. This page is self-contained: nothing is fetched "
        f"when it is viewed."
    )


def write_report(
    result_path: str | os.PathLike[str],
    *,
    html_path: str | os.PathLike[str] | None = None,
    png_path: str | os.PathLike[str] | None = None,
) -> tuple[list[Path], tuple[str, ...]]:
    """Draws the report of a result file; returns the files written and what was missing.

    With neither path given, the HTML goes beside the result
    (`default_report_path`). Raises `ResultFileError` (exit 2) when the file
    is no topos result or a report cannot be written where asked.
    """
    html_option = "--html"
    if html_path is None and png_path is None:
        html_path, html_option = default_report_path(result_path), "the report beside the result"
    # Before the result is read: neither output may replace the result, a device, a FIFO
    # or the other output; `-` is standard output.
    check_outputs(
        {html_option: html_path, "--png": png_path},
        {"the result": result_path},
        standard_output=(html_option, "--png"),
    )
    contents = gather_report_contents(read_result_leniently(result_path))
    written = []
    for path, draw in (
        (html_path, lambda: render_report_html(contents).encode("utf-8")),
        (png_path, lambda: _overview_png(contents)),
    ):
        if path is None:
            continue
        data = draw()
        try:
            write_output(path, data)
        except OSError as error:
            raise ResultFileError(f"cannot write {path}: {error.strerror or error}") from None
        written.append(Path(path))
    return written, contents.missing


def _overview_png(contents: ReportContents) -> bytes:
    """The one image of the main panels."""
    from topos_cli.render.grade_figures import overview_png

    return overview_png(contents)


def wait_to_be_told() -> tuple[str, str] | None:
    """Loads what drawing needs, says `loaded`, then reads `{"result": ..., "html": ...}`
    from standard input; None when the input ends first (the grade drew no report)."""
    from topos_cli.render import grade_figures  # noqa: F401  (matplotlib comes with it)
    from topos_cli.render.plotting import figure_svg, new_figure

    # One small figure through the layout engine and the SVG writer, so the report's first
    # figure does not pay for their first use.
    warm = new_figure(figsize=(2, 1), layout="constrained")
    warm.subplots().set_title("warm")
    figure_svg(warm, "warm")
    sys.stdout.write("loaded\n")
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line.strip():
        return None
    told = json.loads(line)
    return str(told["result"]), str(told["html"])


def main(arguments: Sequence[str] | None = None) -> int:
    """The child process `topos grade` runs: draws the report, says one line if it cannot."""
    parser = argparse.ArgumentParser(
        prog="python -m topos_cli.render.report_html",
        description="Draw the report of a topos result file.",
    )
    parser.add_argument("result", nargs="?")
    parser.add_argument("--html")
    parser.add_argument("--png")
    parser.add_argument(
        "--when-told",
        action="store_true",
        help="load the drawing first, then read the result and page paths on standard input",
    )
    options = parser.parse_args(arguments)
    if options.when_told:
        told = wait_to_be_told()
        if told is None:
            return 0
        options.result, options.html = told
    elif options.result is None:
        parser.error("the result file is required")
    try:
        written, _ = write_report(options.result, html_path=options.html, png_path=options.png)
    except ToposError as error:
        sys.stderr.write(f"topos: error: {error}\n")
        return error.exit_status
    except Exception as error:  # drawing failed: one line, the result is untouched
        if os.environ.get("TOPOS_DEBUG"):
            raise
        sys.stderr.write(f"topos: error: {type(error).__name__}: {error}\n")
        return 1
    for path in written:
        sys.stdout.write(f"{path}\n")
    return 0


if __name__ == "__main__":
    exit_without_teardown(main())  # the page is written: nothing else is left to do
