"""The terminal tables at any width: the verdict, the comparison and the history drawn at
60, 80 and 120 columns with one, three and eight routes, every line within the width and
every piece of every cell (a word, a figure with its spread) whole on one line."""

from __future__ import annotations

import io
import json

import pytest

from tests.cli.result_examples import example_result, some_routes
from topos_cli.judge.compare import compare_results
from topos_cli.judge.history import read_history
from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.comparison_table import (
    COMPARISON_HEADERS,
    comparison_renderables,
    comparison_rows,
)
from topos_cli.render.history_table import (
    HISTORY_HEADERS,
    history_renderables,
    history_rows,
)
from topos_cli.render.tables import (
    FittedTable,
    cell_units,
    fit_widths,
    print_lines,
    rendered_lines,
    wrap_cell,
)
from topos_cli.render.verdict_table import (
    VERDICT_HEADERS,
    VERDICT_LABELS,
    verdict_renderables,
    verdict_rows,
)
from topos_cli.result.result_file import read_result
from topos_cli.shared.units import DASH

WIDTHS = (60, 80, 120)
ROUTE_COUNTS = (1, 3, 8)


def verdict_of(count: int):
    """The verdict of a grade of `count` routes over two repeats."""
    return decide_verdict(example_result(repeats=2, routes=some_routes(count))["repeats"])


def assert_fits_unbroken(lines: list[str], width: int, cells: list[str]) -> None:
    """No line wider than `width`, and each piece of each cell whole on some line."""
    for line in lines:
        assert len(line.rstrip()) <= width, f"{len(line.rstrip())} > {width}: {line!r}"
    text = "\n".join(lines)
    for cell in cells:
        for unit in cell_units(cell):
            if unit != DASH:
                assert unit in text, f"{unit!r} broken or lost at {width} columns:\n{text}"


def test_a_cell_breaks_only_between_words_and_keeps_a_figure_with_its_spread():
    assert cell_units("20.60 ± 0.60 [20.40–20.60]") == ["20.60 ± 0.60", "[20.40–20.60]"]
    assert cell_units("0.89x (Δ 0.50x)") == ["0.89x", "(Δ 0.50x)"]
    assert cell_units("~1.04 ± 0.05x slower") == ["~1.04 ± 0.05x", "slower"]
    assert wrap_cell("timed out (1 of 2 ok)", 10) == ["timed out", "(1 of 2 ok)"]


def test_columns_too_wide_for_the_terminal_give_no_widths():
    assert fit_widths(["a"], [["bit-identical"]], 12) is None
    assert fit_widths(["a", "b"], [["one two", "three"]], 11) == [3, 5]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("count", ROUTE_COUNTS)
def test_the_verdict_fits_the_terminal_and_breaks_no_word(count, width):
    verdict = verdict_of(count)
    lines = list(rendered_lines(verdict_renderables(verdict), width))
    rows = verdict_rows(verdict)
    assert_fits_unbroken(lines, width, [cell for row in rows for cell in row])
    text = "\n".join(lines)
    # Every header whole, as a column's header or as a stacked block's label.
    assert all(h in text for h in VERDICT_HEADERS) or all(
        label in text for label in VERDICT_LABELS[1:]
    )


def test_eighty_columns_show_the_verdict_as_columns_and_sixty_at_least_as_blocks():
    verdict = verdict_of(8)
    at_eighty = "\n".join(rendered_lines(verdict_renderables(verdict), 80))
    assert "ms/step" in at_eighty and "parity" in at_eighty
    assert "  training Δ MiB:" not in at_eighty  # columns, not stacked blocks
    at_forty = "\n".join(rendered_lines(verdict_renderables(verdict), 40))
    assert "  training Δ MiB:" in at_forty  # too narrow for columns: a block per route


@pytest.mark.parametrize("width", (80, 120))
def test_a_column_more_still_fits_without_breaking_a_word(width):
    """Room for a column a later change adds beside wall and CPU ms/step."""
    verdict = verdict_of(8)
    rows = [[*row[:4], "17.90 ± 0.41", *row[4:]] for row in verdict_rows(verdict)]
    headers = (*VERDICT_HEADERS[:4], "GPU ms", *VERDICT_HEADERS[4:])
    groups = [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10]]
    table = FittedTable("topos grade", headers, rows, groups=groups)
    lines = list(rendered_lines([table], width))
    assert_fits_unbroken(lines, width, [cell for row in rows for cell in row])
    assert "GPU ms" in "\n".join(lines) and "CPU ms" in "\n".join(lines)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("count", ROUTE_COUNTS)
def test_the_comparison_fits_the_terminal_and_breaks_no_word(count, width):
    old = example_result(repeats=2, routes=some_routes(count))
    new = example_result(repeats=2, routes=some_routes(count), ms_scale={"engine": 1.3})
    comparison = compare_results(read_result(old), read_result(new))
    lines = list(rendered_lines(comparison_renderables(comparison), width))
    assert_fits_unbroken(
        lines, width, [cell for row in comparison_rows(comparison) for cell in row]
    )
    text = "\n".join(lines)
    assert all(header in text for header in COMPARISON_HEADERS) or "status:" in text


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("count", ROUTE_COUNTS)
def test_the_history_fits_the_terminal_and_breaks_no_word(tmp_path, count, width):
    for day, scale in ((14, 1.0), (15, 1.0), (16, 1.4)):
        result = example_result(
            repeats=2,
            routes=some_routes(count),
            created=f"2026-08-{day}T10:00:00Z",
            commit=str(day) * 20,
            ms_scale={"engine": scale},
        )
        (tmp_path / f"{day}.json").write_text(json.dumps(result))
    history = read_history([tmp_path])
    lines = list(rendered_lines(history_renderables(history), width))
    cells = [cell for group in history.groups for row in history_rows(group) for cell in row]
    assert_fits_unbroken(lines, width, cells)
    text = "\n".join(lines)
    assert all(header in text for header in HISTORY_HEADERS) or "training Δ MiB:" in text


class _Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("width", WIDTHS)
def test_the_notes_under_a_verdict_fold_between_words_on_a_terminal(monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("NO_COLOR", raising=False)
    notes = [
        "memory: recorded predicted training Δ 26.2 MiB, measured 26.2 MiB (1.00x, 16.0 "
        "KiB unexplained)",
        "engine: no clear difference: 1.12x the other's time (0.96-1.16), 3 repeats each; "
        "peak RSS +0.1%, training delta +0.0%; identical loss bits [of 80 steps]",
    ]
    terminal = _Terminal()
    print_lines(notes, terminal)
    lines = terminal.getvalue().splitlines()
    assert all(len(line.rstrip()) <= width for line in lines)
    assert " ".join(" ".join(lines).split()) == " ".join(" ".join(notes).split())
    piped = io.StringIO()  # a pipe keeps a note a line
    print_lines(notes, piped)
    assert piped.getvalue() == "\n".join(notes) + "\n"
