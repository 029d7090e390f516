"""THE Markdown table writer: every renderer that writes a Markdown table calls it."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def markdown_cell(text: str) -> str:
    """A table cell safe in Markdown: pipes escaped, newlines as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    right_aligned: Collection[int] = (),
) -> str:
    """A GitHub-flavoured Markdown table (no newline after its last row); the columns
    numbered in `right_aligned` are aligned right (`---:`), as figures read best."""
    rule = ("---:" if column in right_aligned else "---" for column in range(len(headers)))
    lines = [
        "| " + " | ".join(markdown_cell(header) for header in headers) + " |",
        "| " + " | ".join(rule) + " |",
    ]
    lines.extend("| " + " | ".join(markdown_cell(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)
