"""The verdict for people: rows of cells, drawn by `tables` three ways (the comparison's
are `comparison_table`'s), read from the verdict record a result keeps (`verdict_record`)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.parity_words import parity_words
from topos_cli.render.step_tensors import STEP_TENSOR_COLUMN, shows_step_tensors, step_tensor_cell
from topos_cli.render.tables import (
    FittedTable,
    Forms,
    plain_table,
    status_style,
)
from topos_cli.render.verdict_record import Drawable, verdict_record
from topos_cli.render.warning_groups import group_warnings
from topos_cli.result.grade_result import JudgedVerdict
from topos_cli.result.parity_record import ParityRecord, RouteParityRecord
from topos_cli.result.route_verdict_record import RouteVerdictRecord
from topos_cli.shared.units import DASH, format_milliseconds, mebibytes_cell

#: The verdict table's columns: a short header (a table's, kept short so ten columns fit
#: a terminal) and a label that says it in full (the stacked layout's and the HTML
#: page's). ms/step is the median ± the IQR over measured steps, then [lowest–highest]
#: median across repeats; Δ is the training delta (peak RSS minus RSS at ready).
VERDICT_COLUMNS = (
    ("route", "route"),
    ("status", "status"),
    ("ms/step", "ms/step ± IQR"),
    ("CPU ms", "CPU ms/step"),
    ("1st ms", "first step ms"),
    ("speed", "speed"),
    ("RSS MiB", "peak RSS MiB"),
    ("Δ MiB", "training Δ MiB"),
    ("memory", "memory"),
    ("parity", "parity"),
)
VERDICT_HEADERS = tuple(header for header, _ in VERDICT_COLUMNS)
VERDICT_LABELS = tuple(label for _, label in VERDICT_COLUMNS)

#: Where a terminal too narrow for every column splits the verdict: time, then memory and
#: bits (each table starts with the route).
VERDICT_GROUPS = (
    ("status", "ms/step", "CPU ms", "1st ms", "speed"),
    ("RSS MiB", "Δ MiB", "memory", "parity"),
)


def _status_cell(route: RouteVerdictRecord) -> str:
    """`ok`, `failed`, or e.g. `timed out (1 of 2 ok)` when some repeats finished."""
    if route.failures and route.completed:
        return f"{route.status} ({route.completed} of {route.repeats} ok)"
    return route.status


def _speed_cells(route: RouteVerdictRecord, reference: str) -> tuple[str, str, str, str]:
    """The ms/step, CPU ms/step, first-step and speed-ratio cells of a route."""
    speed = route.speed
    if speed is None:
        return DASH, DASH, DASH, DASH
    summary = speed.milliseconds_per_step
    scale = summary.median
    spread = format_milliseconds(summary.interquartile_range, scale)
    median_cell = f"{format_milliseconds(summary.median)} ± {spread}"
    medians = speed.repeat_medians_milliseconds
    if len(medians) >= 2:
        # The range of the per-repeat medians: how far apart the runs landed.
        low = format_milliseconds(min(medians), scale)
        high = format_milliseconds(max(medians), scale)
        median_cell += f" [{low}–{high}]"
    first = (
        DASH
        if speed.first_step_milliseconds is None
        else format_milliseconds(speed.first_step_milliseconds)
    )
    if route.route == reference:
        ratio = "reference"
    elif speed.ratio is None:
        ratio = DASH
    else:
        ratio = speed.ratio.phrase
    cpu = speed.cpu_milliseconds_per_step
    cpu_cell = DASH if cpu is None else format_milliseconds(cpu)
    return median_cell, cpu_cell, first, ratio


def verdict_headers(drawn: Drawable) -> tuple[str, ...]:
    """The verdict table's short headers: `VERDICT_HEADERS`, the training Δ's column
    given to the step tensors where the verdict has them (`shows_step_tensors`)."""
    verdict = verdict_record(drawn)
    return _with_step_tensors(VERDICT_HEADERS, STEP_TENSOR_COLUMN[0], verdict)


def verdict_labels(drawn: Drawable) -> tuple[str, ...]:
    """The verdict table's headers said in full (`verdict_headers`'s)."""
    verdict = verdict_record(drawn)
    return _with_step_tensors(VERDICT_LABELS, STEP_TENSOR_COLUMN[1], verdict)


def _with_step_tensors(
    names: tuple[str, ...], name: str, verdict: JudgedVerdict
) -> tuple[str, ...]:
    if not shows_step_tensors(verdict):
        return names
    where = VERDICT_HEADERS.index("Δ MiB")
    return (*names[:where], name, *names[where + 1 :])


def _memory_cells(
    route: RouteVerdictRecord, reference: str, step_tensors: bool = False
) -> tuple[str, str, str]:
    """The peak RSS, training delta and memory-ratio cells of a route; in a verdict that
    shows step tensors (`step_tensors`), the peak RSS, the route's step tensors (a dash
    where it has none: never its training Δ in their column), and their ratio to the
    reference's (RSS holds the heap's growth alone: `topos.native.step_tensors`)."""
    memory = route.memory
    if memory is None:
        return DASH, DASH, DASH
    if step_tensors:
        if route.route == reference:
            ratio = "reference"
        elif memory.step_tensor_ratio_or_none is None:
            ratio = DASH
        else:
            ratio = f"{memory.step_tensor_ratio_or_none:.2f}x step tensors"
        return (
            mebibytes_cell(memory.peak_rss_bytes),
            step_tensor_cell(memory.step_tensor_bytes_or_none),
            ratio,
        )
    if route.route == reference:
        ratio = "reference"
    elif memory.peak_ratio is None:
        ratio = DASH
    else:
        ratio = f"{memory.peak_ratio:.2f}x"
        if memory.training_delta_ratio is not None:
            ratio += f" (Δ {memory.training_delta_ratio:.2f}x)"
    return (
        mebibytes_cell(memory.peak_rss_bytes),
        mebibytes_cell(memory.training_delta_bytes),
        ratio,
    )


def _parity_cell(route: RouteParityRecord | None, parity: ParityRecord) -> str:
    """What parity says about one route in the table: its words, or a dash where the
    route was not compared."""
    words = parity_words(route, parity)
    return DASH if words is None else words


def verdict_rows(drawn: Drawable) -> list[list[str]]:
    """The verdict table as rows of strings, one per route, in `VERDICT_HEADERS` order."""
    verdict = verdict_record(drawn)
    parities = {route.route: route for route in verdict.parity.routes}
    agreements = {agreement.route: agreement for agreement in verdict.agreements}
    # A native reference (`eager`, `jit`) graded beside compiled routes alone has no
    # other exact route to be checked against: it is what they are judged against.
    native_reference = next((agreement.reference for agreement in verdict.native), None)
    step_tensors = shows_step_tensors(verdict)
    rows = []
    for route in verdict.routes:
        parity_cell = _parity_cell(parities.get(route.route), verdict.parity)
        if route.route == native_reference and parity_cell == "not checked":
            parity_cell = "reference"
        reference = verdict.reference or ""
        median_cell, cpu_cell, first, speed_ratio = _speed_cells(route, reference)
        peak, delta, memory_ratio = _memory_cells(route, reference, step_tensors)
        rows.append(
            [
                route.route,
                _status_cell(route),
                median_cell,
                cpu_cell,
                first,
                speed_ratio,
                peak,
                delta,
                memory_ratio,
                agreements[route.route].cell if route.route in agreements else parity_cell,
            ]
        )
    return rows


def heap_growth_note(drawn: Drawable) -> str | None:
    """A native verdict's training Δ, said for what it is: the heap's growth beyond the
    warm-up steps' (the worker keeps glibc's mmap threshold, so freed tensors stay in
    the heap), not the step's tensors; None for a verdict without step tensors."""
    verdict = verdict_record(drawn)
    if not shows_step_tensors(verdict):
        return None
    figures = [
        f"{route.route} {mebibytes_cell(route.memory.training_delta_bytes)}"
        for route in verdict.routes
        if route.memory is not None and route.memory.training_delta_bytes is not None
    ]
    if not figures:
        return None
    return (
        "step MiB: the peak bytes of the step's own tensors, as its framework counts "
        "them; heap growth beyond the warm-up (peak minus ready RSS, not the step's "
        "tensors: freed memory stays in the heap), MiB: " + ", ".join(figures)
    )


def verdict_notes(drawn: Drawable) -> list[str]:
    """The lines after the table: legend, failures with their detail, and warnings."""
    verdict = verdict_record(drawn)
    lines = []
    heap = heap_growth_note(verdict)
    if heap is not None:
        lines.append(heap)
    tentative = any(
        route.speed is not None and route.speed.ratio is not None and route.speed.ratio.tentative
        for route in verdict.routes
    )
    if tentative:
        lines.append(
            "~ no clear difference: the repeats' interval reaches within "
            f"±{verdict.settings.speed_tolerance:.0%} or Welch p ≥ "
            f"{verdict.settings.significance_level:g}"
        )
    # Routes whose time went unjudged for the same reason share one line.
    unjudged: dict[tuple[str, str], list[str]] = {}
    for route in verdict.routes:
        ratio = route.speed.ratio if route.speed is not None else None
        judgement = ratio.judgement if ratio is not None else None
        if judgement is not None and not judgement.claim:
            unjudged.setdefault((judgement.outcome, judgement.reason), []).append(route.route)
    for (outcome, reason), names in unjudged.items():
        lines.append(f"{', '.join(names)} time {outcome}: {reason}")
    for route in verdict.routes:
        for failure in route.failures:
            where = f"{route.route} repeat {failure.repeat + 1}: {failure.status}"
            if failure.nonfinite_step is not None:
                where += f" at step {failure.nonfinite_step}"
            detail = [line for line in (failure.detail or "").splitlines() if line.strip()]
            lines.append(where + (f": {detail[0]}" if detail else ""))
            lines.extend(f"    {line}" for line in detail[1:])
    for group in group_warnings(verdict.warnings):
        lines.append(f"warning: {group.message}")
        lines.append(f"    remedy: {group.remedy}")
    return lines


def render_verdict_plain(drawn: Drawable, ascii_only: bool = False) -> str:
    """The verdict as plain text: table, summary sentence, notes and warnings."""
    verdict = verdict_record(drawn)
    table = plain_table(verdict_headers(verdict), verdict_rows(verdict), ascii_only)
    parts = [table, "", verdict.summary or ""]
    notes = verdict_notes(verdict)
    if notes:
        parts.extend(["", *notes])
    return "\n".join(parts) + "\n"


def render_verdict_markdown(drawn: Drawable) -> str:
    """The verdict as Markdown: table, summary in bold, notes and warnings as a list."""
    verdict = verdict_record(drawn)
    rows = verdict_rows(verdict)
    parts = [markdown_table(verdict_headers(verdict), rows), "", f"**{verdict.summary or ''}**"]
    notes = verdict_notes(verdict)
    if notes:
        parts.append("")
        # Indented lines (a failure's detail, a warning's remedy) nest under the line above.
        parts.extend(
            f"  - {note.strip()}" if note.startswith("    ") else f"- {note}" for note in notes
        )
    return "\n".join(parts) + "\n"


def _column_groups(
    headers: tuple[str, ...], groups: tuple[tuple[str, ...], ...]
) -> list[list[int]]:
    """`groups` of header names as column indices; a column no group names (one added
    later) joins the first group, so a split table never loses it."""
    indices = [[headers.index(name) for name in group if name in headers] for group in groups]
    named = {index for group in indices for index in group}
    indices[0] += [index for index in range(1, len(headers)) if index not in named]
    return [sorted(group) for group in indices]


def _verdict_style(column: int, text: str) -> str:
    """Statuses and parity coloured, a tentative speed (`~`) yellow."""
    header = VERDICT_HEADERS[column]
    if header == "status" or (header == "parity" and text != DASH):
        return status_style(text)
    if header == "speed" and text.startswith(("~", "inconclusive")):
        return "yellow"
    return ""


def verdict_table(drawn: Drawable) -> FittedTable:
    """The verdict for a terminal: all columns when they fit, time and memory as two tables
    when they do not, a block per route when even those do not; no word broken."""
    verdict = verdict_record(drawn)
    numeric = {"ms/step", "1st ms", "RSS MiB", "Δ MiB", "CPU ms", STEP_TENSOR_COLUMN[0]}
    headers = verdict_headers(verdict)
    groups = tuple(
        tuple(
            STEP_TENSOR_COLUMN[0] if name == "Δ MiB" and name not in headers else name
            for name in group
        )
        for group in VERDICT_GROUPS
    )
    return FittedTable(
        "topos grade",
        headers,
        verdict_rows(verdict),
        right_aligned=frozenset(index for index, header in enumerate(headers) if header in numeric),
        style=_verdict_style,
        groups=_column_groups(headers, groups),
        labels=verdict_labels(verdict),
    )


def verdict_renderables(drawn: Drawable) -> list[RenderableType]:
    """The verdict on a terminal: its table, the summary green or red, the notes coloured."""
    verdict = verdict_record(drawn)
    colour = {0: "bold green", 5: "bold yellow"}.get(verdict.exit_status, "bold red")
    summary = Text(verdict.summary or "", style=colour)
    notes = [Text(line, style=_note_style(line)) for line in verdict_notes(verdict)]
    return [verdict_table(verdict), summary, *notes]


#: The verdict in its three forms; `print_verdict(verdict, file=..., markdown=..., plain=...)`.
VERDICT_FORMS = Forms(render_verdict_markdown, render_verdict_plain, verdict_renderables)
print_verdict = VERDICT_FORMS.print


def _note_style(line: str) -> str:
    """Warnings, remedies and the legend in yellow; failures and their detail in red."""
    yellow = ("warning", "remedy", "~")
    if line.startswith(STEP_TENSOR_COLUMN[0]):
        return ""  # the legend of a native verdict's memory: neither a warning nor a fault
    return "yellow" if line.lstrip().startswith(yellow) or " time " in line else "red"
