"""What every exporter is made from: the grade's workload and its judged verdict."""

from __future__ import annotations

from dataclasses import dataclass

from topos_cli.render.verdict_record import Drawable


@dataclass(frozen=True)
class ExportedGrade:
    """One grade as the exporters read it: the workload's name (a benchmark's entries are
    named by it) and the verdict the result JSON holds (`None` when no route ran; a
    judge's verdict is drawn by its record, `verdict_record`), so an export never
    disagrees with the JSON."""

    workload: str
    verdict: Drawable | None
