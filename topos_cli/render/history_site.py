"""The history as a static site (`topos history --site DIR`): what GitHub Pages, or any
static host, serves as it is.

    DIR/index.html                          the machines, and per machine its workloads
    DIR/<machine>/<workload>-<key>.html     a trend per machine and workload (and settings):
                                            spread, judged changes, the table
    DIR/<machine>/reports/<grade>.html      each grade's report, drawn from its result
    DIR/.nojekyll                           GitHub Pages serves the files untouched

Every page is self-contained (its figures inline SVG, nothing fetched) and links the
others relatively, so the folder works wherever it is put, even opened from disk. A
trend page holds the grades of one machine only (`history.grouping_key`).

Every file goes through the guarded writer (`output_path.write_inside`): nothing
planted in DIR is followed or replaced unless it is a regular file, names made from user
data (a result's or a workload's name) are shortened to fit any file system and stay
unique (also where case is not told apart), and a file that cannot be written costs
only itself: the rest of the site is written before the command says what failed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from topos_cli.judge.history import History, HistoryGroup, HistoryPoint
from topos_cli.render.history_html import render_history_html
from topos_cli.render.history_table import EXIT_WORDS, grade_count
from topos_cli.render.html_page import bullet_list, escape, page, table
from topos_cli.render.report_contents import gather_report_contents
from topos_cli.render.report_html import render_report_html
from topos_cli.result.lenient_result import interpret_result
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.output_path import fitting_name, write_inside

#: The site's front page, the one path a reader starts from.
INDEX = "index.html"


def trend_page_path(group: HistoryGroup) -> str:
    """Where a group's trend page goes in the site: `<machine>/<workload>-<digest>.html`
    (the digest of its whole key, so groups that differ in a setting get pages apart)."""
    digest = hashlib.sha256(repr(group.key).encode("utf-8")).hexdigest()[:8]
    workload = "".join(c if c.isalnum() or c in "-_" else "-" for c in group.workload)
    return f"{group.machine_slug}/{fitting_name(workload)}-{digest}.html"


def _report_name(point: HistoryPoint, taken: set[str]) -> str:
    """A grade's report's file name: its result's name as an HTML file, made unique."""
    stem = PurePosixPath(point.source.replace("\\", "/").rsplit(":", 1)[-1]).stem or "grade"
    stem = fitting_name("".join(c if c.isalnum() or c in "-_." else "-" for c in stem))
    name, number = f"{stem}.html", 1
    # Told apart without case: `R1.html` and `r1.html` are one file on macOS and Windows.
    while name.casefold() in taken:
        number += 1
        name = f"{stem}-{number}.html"
    taken.add(name.casefold())
    return name


def _report_page(point: HistoryPoint) -> str | None:
    """The report of a grade, drawn from its result as `topos report` draws it."""
    if point.result is None:
        return None
    lenient = interpret_result(point.result.to_json(), point.source)
    return render_report_html(gather_report_contents(lenient))


def site_pages(history: History) -> dict[str, str]:
    """Every page of the site by its path inside the site (`/`-separated)."""
    pages: dict[str, str] = {}
    reports: dict[str, set[str]] = {}
    index_rows: dict[str, list[tuple[HistoryGroup, str]]] = {}
    for group in history.groups:
        slug = group.machine_slug
        taken = reports.setdefault(slug, set())
        links: list[str | None] = []
        for point in group.points:
            report = _report_page(point)
            if report is None:
                links.append(None)
                continue
            name = _report_name(point, taken)
            pages[f"{slug}/reports/{name}"] = report
            links.append(f"reports/{name}")
        path = trend_page_path(group)
        pages[path] = render_history_html(
            History(groups=(group,), skipped=()),
            links=lambda _group, links=links: links,
            title=f"{group.workload} on {group.machine_name}",
            preface=[f'<p><a href="../{INDEX}">All machines and workloads</a></p>'],
        )
        index_rows.setdefault(slug, []).append((group, path))
    pages[INDEX] = render_index(history, index_rows)
    return pages


def _verdict_cell(point: HistoryPoint) -> str:
    """The latest grade's verdict, with its exit status in words."""
    status = point.exit_status
    words = "" if status is None else f"exit {status} {EXIT_WORDS.get(status, '')}".strip()
    return "; ".join(part for part in (point.verdict or point.status, words) if part)


def render_index(
    history: History, rows_by_machine: dict[str, list[tuple[HistoryGroup, str]]]
) -> str:
    """The front page: per machine its facts, and a row per workload (and settings) with
    its grades, its latest commit and verdict, linking its trend page."""
    machines = len(rows_by_machine)
    grades = sum(len(group.points) for group in history.groups)
    body = [
        "<h1>topos history</h1>",
        f"<p>{grade_count(grades)} on {machines} machine{'s' if machines != 1 else ''}. "
        "A grade's figures hold for its machine: each trend is of one machine only, "
        "never mixed with another's.</p>",
    ]
    for slug, rows in rows_by_machine.items():
        group = rows[0][0]
        body += [
            f'<h2 id="{escape(slug)}">{escape(group.machine_name)}</h2>',
            bullet_list([f"{name}: {value}" for name, value in group.machine], "facts"),
            table(
                ("workload and settings", "grades", "latest commit", "latest verdict"),
                [
                    [
                        member.title,
                        str(len(member.points)),
                        member.points[-1].commit,
                        _verdict_cell(member.points[-1]),
                    ]
                    for member, _ in rows
                ],
                numeric_columns=(1,),
                links=[[path, None, None, None] for _, path in rows],
            ),
        ]
    if history.skipped:
        body.append(bullet_list([f"skipped: {reason}" for reason in history.skipped], "notes"))
    body.append(
        "<footer>A static site written by topos history --site: every page is "
        "self-contained, nothing is fetched when it is viewed.</footer>"
    )
    return page("topos history", "\n".join(body))


def write_site(history: History, directory: str | os.PathLike[str]) -> list[Path]:
    """Writes the site into `directory` (created if missing); returns the files written.
    Each goes through `write_inside`; one that cannot be written (something planted where
    it belongs, a full disk) is passed over and the rest written, then `ToposUsageError`
    says how many were not and why the first was not. The directory itself is checked
    first by the command (`check_outputs`)."""
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ToposUsageError(f"cannot write {root}: {error.strerror or error}") from None
    written: list[Path] = []
    failures: list[str] = []
    pages: Sequence[tuple[str, str]] = [*site_pages(history).items(), (".nojekyll", "")]
    for relative, text in pages:
        try:
            written.append(write_inside(root, relative, text.encode("utf-8")))
        except ToposUsageError as error:
            failures.append(str(error))
        except OSError as error:
            failures.append(f"cannot write {root / relative}: {error.strerror or error}")
    if failures:
        others = len(failures) - 1
        rest = f" (and {others} more of its {len(pages)} files)" if others else ""
        done = "nothing written"
        if written:
            done = (
                f"the site's other {len(written)} files are written"
                if len(written) > 1
                else f"the site's one other file, {written[0].name}, is written"
            )
        raise ToposUsageError(f"{failures[0]}{rest}; {done}")
    return written
