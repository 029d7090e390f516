"""`topos grade --against`'s comparison for people: a heading, a line per route (or a
Markdown table, by the one writer), the notes, then the summary; judged by
`judge.against`, only read here."""

from __future__ import annotations

from topos_cli.judge.against import CheckoutComparison, time_phrase
from topos_cli.render.exporters.markdown_table import markdown_table

#: The Markdown table's headers.
AGAINST_HEADERS = ("route", "time", "instructions", "memory", "bits")


def against_lines(comparison: CheckoutComparison, markdown: bool = False) -> list[str]:
    """The comparison for the terminal: a heading, one line per route (or a Markdown
    table), then the summary."""
    heading = f"this checkout against {comparison.other} (time ratio: this / other, 95% interval)"
    rows = []
    for route in comparison.routes:
        memory = ", ".join(
            f"{change.figure} {change.change:+.1%}"
            for change in route.memory
            if change.change is not None
        )
        rows.append((route.route, time_phrase(route.time), memory or "memory not measured", route))
    if markdown:
        cells = [
            [name, time, route.counts.phrase() if route.counts else "—", memory, route.bits.phrase]
            for name, time, memory, route in rows
        ]
        lines = [f"**{heading}**", "", *markdown_table(AGAINST_HEADERS, cells).split("\n")]
    else:
        lines = [heading]
        for name, time, memory, route in rows:
            lines.append(f"  {name}: {time}; {memory}; {route.bits.phrase}")
            if route.counts is not None:
                lines.append(f"    {route.counts.phrase()}")
            lines += [f"    did not finish: {failure}" for failure in route.failures]
    disagreements = [route.counts_disagree for route in comparison.routes]
    lines += [f"note: {line}" for line in disagreements if line]
    return [*lines, "", comparison.summary]
