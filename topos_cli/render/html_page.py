"""A self-contained HTML page: one file, its style inline, nothing fetched when viewed.

The report of a grade and the history page are built from these pieces.
Every text is escaped; figures come in as inline SVG elements.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

#: The page's whole style: no web fonts, no scripts, nothing from the network.
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       margin: 0 auto; padding: 1.2em 1.6em 3em; max-width: 1280px; color: #1a1a1a;
       background: #ffffff; line-height: 1.4; }
h1 { font-size: 1.5em; margin: 0.2em 0; }
h2 { font-size: 1.2em; margin: 1.6em 0 0.4em; border-bottom: 1px solid #dddddd; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
p.summary { font-size: 1.15em; font-weight: bold; padding: 0.5em 0.8em; border-radius: 4px; }
p.summary.good { background: #e8f5e9; color: #1b5e20; }
p.summary.bad { background: #ffebee; color: #b71c1c; }
div.missing { background: #fff8e1; border-left: 4px solid #f9a825; padding: 0.4em 1em;
              margin: 1em 0; }
div.missing ul { margin: 0.3em 0; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #d0d0d0; padding: 0.25em 0.6em; text-align: left;
         white-space: nowrap; }
th { background: #f3f3f3; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
td.regression { background: #ffebee; }
td.improvement { background: #e8f5e9; }
div.scroll { overflow-x: auto; }
ul.facts { list-style: none; padding-left: 0; font-family: ui-monospace, "DejaVu Sans Mono",
           monospace; font-size: 0.88em; }
ul.facts li { margin: 0.15em 0; }
ul.notes li.warning { color: #8a6d00; }
figure { margin: 0.6em 0 1.2em; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 0.9em; color: #444444; margin-top: 0.3em; }
footer { margin-top: 2.5em; font-size: 0.85em; color: #666666; }
"""


def escape(text: object) -> str:
    """`text` safe between HTML tags and inside attribute values."""
    return html.escape(str(text), quote=True)


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numeric_columns: Sequence[int] = (),
    cell_classes: Sequence[Sequence[str]] | None = None,
    table_id: str | None = None,
    links: Sequence[Sequence[str | None]] | None = None,
) -> str:
    """An HTML table of strings; `numeric_columns` are right-aligned, `cell_classes` (per row,
    per cell) mark cells such as a regression, `links` (per row, per cell) make a cell a
    link to its address."""
    numeric = set(numeric_columns)
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    body = []
    for row_index, row in enumerate(rows):
        cells = []
        for column, cell in enumerate(row):
            classes = ["number"] if column in numeric else []
            if cell_classes is not None and cell_classes[row_index][column]:
                classes.append(cell_classes[row_index][column])
            attribute = f' class="{" ".join(classes)}"' if classes else ""
            text = escape(cell)
            address = links[row_index][column] if links is not None else None
            if address:
                text = f'<a href="{escape(address)}">{text}</a>'
            cells.append(f"<td{attribute}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    identity = f' id="{escape(table_id)}"' if table_id else ""
    return (
        f'<div class="scroll"><table{identity}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def bullet_list(items: Sequence[str], css_class: str = "", item_class: str = "") -> str:
    """An unordered list of escaped items."""
    attribute = f' class="{css_class}"' if css_class else ""
    item_attribute = f' class="{item_class}"' if item_class else ""
    inner = "".join(f"<li{item_attribute}>{escape(item)}</li>" for item in items)
    return f"<ul{attribute}>{inner}</ul>"


def missing_box(missing: Sequence[str], heading: str = "What this page could not show") -> str:
    """A highlighted list of what is missing, or nothing when nothing is."""
    if not missing:
        return ""
    return (
        f'<div class="missing" id="missing"><strong>{escape(heading)}</strong>'
        f"{bullet_list(missing)}</div>"
    )


def figure(svg: str, caption: str, figure_id: str) -> str:
    """An inline SVG figure with its caption."""
    return (
        f'<figure id="{escape(figure_id)}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
    )


def page(title: str, body: str) -> str:
    """A whole HTML document: `body` under a head holding only the title and the style."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )
