"""The history of a workload in the terminal: per group, one row per grade and route, each
figure with its change against the grade before, significant changes marked."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import RenderableType
from rich.text import Text

from topos_cli.judge.history import COUNTED, STEP_TENSORS, History, HistoryGroup, HistoryPoint
from topos_cli.render.exporters.markdown_table import markdown_table
from topos_cli.render.step_tensors import STEP_TENSOR_COLUMN, step_tensor_cell
from topos_cli.render.tables import FittedTable, Forms, plain_table
from topos_cli.shared.units import DASH, MEBIBYTE, format_milliseconds

HISTORY_HEADERS = ("created", "commit", "route", "ms/step", "RSS MiB", "Δ MiB")

#: The history's columns said in full, as the stacked layout and the page name them.
HISTORY_LABELS = ("created", "commit", "route", "ms/step", "peak RSS MiB", "training Δ MiB")

#: How a judged change is marked in a cell, as `compare` judges it (`time_judgement`).
MARKS = {"regression": "▲", "improvement": "▼"}

LEGEND = (
    "▲ regression, ▼ improvement against the grade before, as topos compare judges them: "
    "for time only from a test on per-repeat medians (3 repeats each at least) with its "
    "interval beyond the tolerance; percentages are changes against the grade before, "
    "(inconclusive) where the repeats were too few or too disturbed to judge; "
    "[lowest–highest] over the grade's repeats (one repeat: its steps' quartiles)"
)


def _ended(point: HistoryPoint, route: str) -> str | None:
    """How the route's runs in this grade ended, when none of them completed."""
    if point.result is None:
        return None
    statuses = sorted({run.status for run in point.result.repeats if run.route == route})
    return None if not statuses or "ok" in statuses else "/".join(statuses)


def figure_cell(point: HistoryPoint, route: str, figure: str) -> str:
    """A figure's value, its change against the previous grade, and a mark if significant."""
    value = point.values.get((route, figure))
    if value is None:
        # A route none of whose runs completed says how they ended, once, not a row of
        # dashes that reads as "not measured".
        ended = _ended(point, route)
        return ended if ended and figure == "ms/step" else DASH

    def form(figure_value: float) -> str:
        if figure == COUNTED:
            return f"{figure_value / 1e6:.3f} M"
        if figure == "ms/step":
            return format_milliseconds(figure_value, value)
        if figure == STEP_TENSORS:
            return step_tensor_cell(round(figure_value))
        return f"{figure_value / MEBIBYTE:.1f}"

    text = form(value)
    spread = point.spreads.get((route, figure))
    if spread is not None and form(spread[0]) != form(spread[1]):
        # The spread behind the value: its repeats' lowest and highest (see figure_spreads).
        text += f" [{form(spread[0])}–{form(spread[1])}]"
    change = point.changes.get((route, figure))
    if change is not None and change.change is not None:
        text += f" ({change.change:+.1%})"
    if change is not None and change.status == "inconclusive":
        text += " (inconclusive)"
    mark = MARKS.get(point.significant(route, figure) or "")
    return f"{text} {mark}" if mark else text


def history_headers(group: HistoryGroup, labels: bool = False) -> tuple[str, ...]:
    """A group's table headers (`labels`: said in full): a native step's group has a
    column of its step tensors, as the verdict table names it; a counted group's has a
    column of instructions per step."""
    headers = HISTORY_LABELS if labels else HISTORY_HEADERS
    if group.step_tensors:
        headers = (*headers, STEP_TENSOR_COLUMN[1 if labels else 0])
    return (*headers, "instructions/step") if group.counted else headers


def history_rows(group: HistoryGroup) -> list[list[str]]:
    """A group's rows, in `HISTORY_HEADERS` order: one per grade and route, oldest first."""
    rows = []
    for point in group.points:
        for route in group.routes:
            if not any(key[0] == route for key in point.values):
                continue
            rows.append(
                [
                    point.created,
                    point.commit,
                    route,
                    *(figure_cell(point, route, figure) for figure in group.figures),
                ]
            )
    return rows


#: The verdict table's columns: per machine and workload, its latest grade's verdict.
VERDICT_HEADERS = ("machine", "workload", "commit", "exit", "verdict")

#: What an exit status means, in the verdict table.
EXIT_WORDS = {
    0: "ok",
    1: "route failed",
    2: "usage",
    3: "parity broken",
    4: "regression",
    5: "inconclusive",
    130: "interrupted",
}


def verdict_rows(history: History) -> list[list[str]]:
    """Per machine, workload and settings (a group), the verdict of its latest grade: what
    a pull request's comment shows of a matrix of runners, one row per runner."""
    rows = []
    for group in history.groups:
        point = group.points[-1]
        named = dict(group.machine)
        machine = f"{named.get('CPU')} ({named.get('architecture')}, {named.get('OS')})"
        status = point.exit_status
        exit_text = DASH if status is None else f"{status} {EXIT_WORDS.get(status, '')}".strip()
        rows.append([machine, group.title, point.commit, exit_text, point.verdict or point.status])
    return rows


def history_notes(history: History) -> list[str]:
    """The lines after the tables: the legend, the grouping and what was skipped."""
    notes = [LEGEND]
    if history.grouping_note:
        notes.append(history.grouping_note)
    notes += [f"skipped: {reason}" for reason in history.skipped]
    return notes


def render_history_plain(history: History, ascii_only: bool = False) -> str:
    """The history as plain text: per group a heading, the host line and a table."""
    parts = []
    for group in history.groups:
        parts += [f"{group.title} ({grade_count(len(group.points))})", group.host]
        parts += [plain_table(history_headers(group), history_rows(group), ascii_only), ""]
    parts += history_notes(history)
    text = "\n".join(parts) + "\n"
    if ascii_only:
        from topos_cli.shared.output_stream import ascii_spelling

        text = ascii_spelling(text)
    return text


def render_history_markdown(history: History) -> str:
    """The history as Markdown: the latest verdict per machine, then per group a heading
    and a table, then the notes as a list."""
    parts = ["**Verdict per machine**", "", markdown_table(VERDICT_HEADERS, verdict_rows(history))]
    parts += [""]
    for group in history.groups:
        parts += [f"**{group.title}** ({grade_count(len(group.points))})", "", group.host, ""]
        parts += [markdown_table(history_headers(group), history_rows(group)), ""]
    parts += [f"- {note}" for note in history_notes(history)]
    return "\n".join(parts) + "\n"


def _mark_style(column: int, text: str) -> str:
    """A regression's cell red, an improvement's green."""
    return "red" if "▲" in text else "green" if "▼" in text else ""


def history_renderables(history: History) -> Iterator[RenderableType]:
    """The history on a terminal: a table per group (marks coloured) over its host, then
    the notes."""
    for group in history.groups:
        table = FittedTable(
            f"{group.title} ({grade_count(len(group.points))})",
            history_headers(group),
            history_rows(group),
            right_aligned=frozenset(range(3, len(history_headers(group)))),
            style=_mark_style,
            labels=history_headers(group, labels=True),
            name_columns=3,
        )
        yield table
        yield Text(group.host, style="dim")
        yield ""  # a blank line between groups
    for note in history_notes(history):
        yield Text(note, style="" if note == LEGEND else "yellow")


#: The history in its three forms, printed as the verdict is.
HISTORY_FORMS = Forms(render_history_markdown, render_history_plain, history_renderables)
print_history = HISTORY_FORMS.print


def grade_count(count: int) -> str:
    """`1 grade`, `3 grades`."""
    return f"{count} grade{'s' if count != 1 else ''}"
