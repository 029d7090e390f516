"""Tables for people, drawn three ways from rows of strings: plain text, Markdown (by the
one writer, `exporters.markdown_table`), rich.

Plain text when standard output is not a terminal or `NO_COLOR` is set (so
logs and pipes get no escape codes and no box drawing); Markdown for
pull-request comments and CI job summaries; a rich table on a terminal.
rich does not import NumPy, so the parent process stays light.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TextIO, TypeVar

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from topos_cli.shared.output_stream import (
    ASCII_SPELLINGS,
    ascii_spelling,
    can_encode,
    use_plain_output,
)

#: What a `Forms` prints: a verdict, a comparison, a history.
Subject = TypeVar("Subject")


def plain_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], ascii_only: bool = False
) -> str:
    """Aligned columns separated by two spaces, under a header and a rule; no colour, no boxes.

    With `ascii_only` every cell is spelled in ASCII (`±` as `+/-`) before the
    columns are measured, so they stay aligned on an ASCII stream.
    """
    if ascii_only:
        headers = [ascii_spelling(header) for header in headers]
        rows = [[ascii_spelling(cell) for cell in row] for row in rows]
    widths = [
        max([len(header)] + [len(row[column]) for row in rows])
        for column, header in enumerate(headers)
    ]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(headers).rstrip(), rule] + [line(row).rstrip() for row in rows])


def status_style(text: str) -> str:
    """The colour of a status or parity cell: green when good, red when not."""
    good = ("ok", "bit-identical", "agrees", "reference", "within tolerance", "improvement")
    if text.startswith(good):
        return "green"
    yellow = (
        "interrupted",
        "not checked",
        "not significant",
        "missing",
        "inconclusive",
        "no clear",
    )
    if text.startswith(yellow):
        return "yellow"
    return "red"


#: Characters between two columns of a fitted table: one of padding either side of a
#: blank divider (rich's SIMPLE_HEAD box; no padding at the outer edges).
COLUMN_GAP = 3

#: A space that must not break a cell: beside `±` (a figure and its spread are one unit),
#: before a history's mark (`▲`, `▼`), and (in `cell_units`) inside a parenthesis, so
#: `(Δ 0.50x)` or `(step 12)` stays on one line.
_GLUED = re.compile(r" (?=± )|(?<= ±) | (?=[▲▼])")

#: What a glued space is while a cell is split at the others.
_GLUE = "\x00"


def cell_units(text: str) -> list[str]:
    """The pieces a cell may be broken between, in order: its words, except that a figure
    and its `± spread` stay together and a parenthesised phrase is one piece.

    `20.60 ± 0.60 [20.40–20.60]` gives `20.60 ± 0.60`, `[20.40–20.60]`; `0.89x (Δ 0.50x)`
    gives `0.89x`, `(Δ 0.50x)`. A piece is never broken: a column is at least as wide as
    its widest piece, or the table is not drawn as columns at all.
    """
    units: list[str] = []
    depth = 0
    for word in _GLUED.sub(_GLUE, text).split(" "):
        if not word:
            continue
        word = word.replace(_GLUE, " ")
        if depth > 0 and units:
            units[-1] += " " + word
        else:
            units.append(word)
        depth = max(0, depth + word.count("(") - word.count(")"))
    return units


def wrap_cell(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` cells, broken only between `cell_units` (a piece
    wider than `width` gets a line of its own, whole)."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for unit in cell_units(paragraph):
            if line and cell_len(line) + 1 + cell_len(unit) > width:
                lines.append(line)
                line = unit
            else:
                line = f"{line} {unit}" if line else unit
        lines.append(line)
    return lines


def _natural_width(text: str) -> int:
    """The width of `text` on one line per paragraph."""
    return max(cell_len(line) for line in text.split("\n"))


def _narrowest_width(text: str) -> int:
    """The width of the widest piece of `text` (`cell_units`): below it a piece would break."""
    return max([cell_len(unit) for line in text.split("\n") for unit in cell_units(line)] + [1])


def fit_widths(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[int] | None:
    """Widths for the columns of a table `width` cells wide that break no header and no
    cell inside a piece (`cell_units`), or `None` when even the narrowest such table is
    wider.

    Every column starts at its narrowest; what is left over goes to the columns needing
    the least to fit on one line first, so as many columns as possible read on one line.
    """
    columns = list(zip(headers, *rows, strict=True))
    # A header is read whole: its column is never narrower than it (a cell may wrap).
    narrowest = [
        max(len(header), *(_narrowest_width(cell) for cell in column[1:]))
        for header, column in zip(headers, columns, strict=True)
    ]
    natural = [max(_natural_width(cell) for cell in column) for column in columns]
    spare = width - sum(narrowest) - COLUMN_GAP * (len(columns) - 1)
    if spare < 0:
        return None
    widths = list(narrowest)
    for index in sorted(range(len(columns)), key=lambda index: natural[index] - narrowest[index]):
        grant = min(natural[index] - widths[index], spare)
        widths[index] += grant
        spare -= grant
    return widths


#: The style of a cell: given its column and its text, a rich style ("" for none).
CellStyle = Callable[[int, str], str]


def _no_style(column: int, text: str) -> str:
    return ""


@dataclass(frozen=True)
class FittedTable:
    """A table that fits the terminal it is printed on, never breaking a word of a cell.

    A rich renderable that chooses its layout by the width it is given: all
    columns in one table if they fit (cells wrapped only between `cell_units`);
    else, if `groups` are given, one table per group of columns (each starting
    with the `name_columns` that name the row); else a stacked layout, one
    block per row of `label: value` lines (`labels`, longer than the headers,
    name the values there). rich's own wrapping would squeeze a column below
    its widest word and break it (`ms/ste p`, `bit-ide ntical`), so widths are
    chosen here and rich is told not to wrap.
    """

    title: str
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    right_aligned: frozenset[int] = frozenset()
    style: CellStyle = _no_style
    #: Column groups (indices after the first column) for a split layout, if any.
    groups: Sequence[Sequence[int]] = ()
    #: The names of the values in the stacked layout; the headers when empty.
    labels: Sequence[str] = field(default_factory=tuple)
    #: How many leading columns name a row: a stacked block's heading, a split table's
    #: leading columns.
    name_columns: int = 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """The table laid out for `options.max_width` (see the class)."""
        yield from self.layout(options.max_width)

    def layout(self, width: int) -> list[RenderableType]:
        """The renderables of the table at `width` cells: one table, a table per group, or
        stacked blocks, the first of these that fits."""
        whole = self._table(self.title, range(len(self.headers)), width)
        if whole is not None:
            return [whole]
        if self.groups:
            names = list(range(self.name_columns))
            tables = [
                self._table(self.title if index == 0 else "", [*names, *group], width)
                for index, group in enumerate(self.groups)
            ]
            if all(table is not None for table in tables):
                return [table for table in tables if table is not None]
        return self._stacked(width)

    def _table(self, title: str, columns: Iterable[int], width: int) -> Table | None:
        """A table of `columns` at most `width` wide, or `None` if it cannot fit."""
        columns = list(columns)
        headers = [self.headers[column] for column in columns]
        rows = [[row[column] for column in columns] for row in self.rows]
        widths = fit_widths(headers, rows, width)
        if widths is None:
            return None
        table = Table(
            title=Text(title, style="italic") if title else None,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
        )
        for column, header, column_width in zip(columns, headers, widths, strict=True):
            table.add_column(
                "\n".join(wrap_cell(header, column_width)),
                justify="right" if column in self.right_aligned else "left",
                width=column_width,
                no_wrap=True,
            )
        for row in self.rows:
            table.add_row(
                *(
                    Text(
                        "\n".join(wrap_cell(row[column], column_width)),
                        style=self.style(column, row[column]),
                    )
                    for column, column_width in zip(columns, widths, strict=True)
                )
            )
        return table

    def _stacked(self, width: int) -> list[RenderableType]:
        """One block per row: the row's name, then a `label: value` line per other column,
        values wrapped between pieces under their first line."""
        labels = list(self.labels) or list(self.headers)
        first = self.name_columns
        indent = 2 + max(cell_len(label) for label in labels[first:]) + 2
        renderables: list[RenderableType] = []
        if self.title:
            renderables.append(Text(self.title, style="italic"))
        for row in self.rows:
            heading = " ".join(cell for cell in row[:first] if cell)
            renderables.append(Text("\n".join(wrap_cell(heading, width)), style="bold"))
            for column in range(first, len(row)):
                head = f"  {labels[column]}:".ljust(indent)
                lines = wrap_cell(row[column], max(width - indent, 1))
                text = Text(head)
                text.append(lines[0], style=self.style(column, row[column]))
                for line in lines[1:]:
                    text.append("\n" + " " * indent)
                    text.append(line, style=self.style(column, row[column]))
                renderables.append(text)
        return renderables


def rendered_lines(renderables: Iterable[RenderableType], width: int) -> Iterator[str]:
    """The lines `renderables` print on a terminal `width` cells wide, without styles
    (for tests and for measuring)."""
    import io

    stream = io.StringIO()
    console = Console(file=stream, width=width, color_system=None, highlight=False)
    for renderable in renderables:
        console.print(renderable)
    yield from stream.getvalue().splitlines()


@dataclass(frozen=True)
class Forms(Generic[Subject]):
    """The three forms a printed result takes, each drawn from the result: Markdown (for
    `--markdown`), plain text (with `ascii_only` for an ASCII stream), and the rich
    renderables a terminal shows, in order."""

    markdown: Callable[[Subject], str]
    plain: Callable[[Subject, bool], str]
    rich: Callable[[Subject], Iterable[RenderableType]]

    def print(
        self,
        subject: Subject,
        *,
        file: TextIO | None = None,
        markdown: bool = False,
        plain: bool | None = None,
    ) -> None:
        """Prints `subject` to `file` (standard output by default) in one form: Markdown if
        asked, else plain text or rich as `use_plain_output` decides (unless `plain` says)."""
        stream = file if file is not None else sys.stdout
        if markdown:
            stream.write(self.markdown(subject))
        elif plain if plain is not None else use_plain_output(stream):
            # An ASCII stream gets ASCII spellings, measured before the columns are aligned.
            stream.write(self.plain(subject, not can_encode("".join(ASCII_SPELLINGS), stream)))
        else:
            console = Console(file=stream, highlight=False)
            for renderable in self.rich(subject):
                console.print(renderable)


def _one_line_a_note(lines: Sequence[str]) -> str:
    return "\n".join(lines) + "\n"


#: Note lines in their three forms: one line a note in Markdown, a file or a pipe; on a
#: terminal a `Text` a note (its brackets are not markup), which rich folds between words.
NOTE_LINES: Forms[Sequence[str]] = Forms(
    markdown=_one_line_a_note,
    plain=lambda lines, ascii_only: _one_line_a_note(lines),
    rich=lambda lines: [Text(line) for line in lines],
)


def print_lines(lines: Sequence[str], file: TextIO, *, markdown: bool = False) -> None:
    """Note lines under a printed result (the data, the memory predictions, a comparison):
    on a terminal folded at word boundaries to its width, as the verdict's own notes are
    (the terminal would cut a long line mid-word); as they are in Markdown, a file or a
    pipe, one line a note."""
    NOTE_LINES.print(lines, file=file, markdown=markdown)
