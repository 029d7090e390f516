"""Tables for people, drawn three ways from rows of strings: plain text, Markdown, rich.

Plain text when standard output is not a terminal or `NO_COLOR` is set (so
logs and pipes get no escape codes and no box drawing); Markdown for
pull-request comments and CI job summaries; a rich table on a terminal.
rich does not import NumPy, so the parent process stays light.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TextIO, TypeVar

from rich import box
from rich.console import Console, RenderableType
from rich.table import Table

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


def _markdown_cell(text: str) -> str:
    """A table cell safe in Markdown: pipes escaped, newlines as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = [
        "| " + " | ".join(_markdown_cell(header) for header in headers) + " |",
        "| " + " | ".join("---" for _ in headers) + " |",
    ]
    lines.extend("| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)


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


def rich_table(title: str, headers: Sequence[str], right_aligned: set[int]) -> Table:
    """A compact rich table (no outer edge) that wraps cells on a narrow terminal.

    Cells fold rather than end in an ellipsis, and no column has a minimum
    width, because rich drops whole columns it cannot fit: a wrapped figure
    is still there, a dropped one is lost.
    """
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
    for column, header in enumerate(headers):
        table.add_column(
            header, justify="right" if column in right_aligned else "left", overflow="fold"
        )
    return table


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
