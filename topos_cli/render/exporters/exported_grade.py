"""What every exporter is made from: the grade's workload and its judged verdict."""

from __future__ import annotations

from dataclasses import dataclass

from topos_cli.judge.verdict import Verdict


@dataclass(frozen=True)
class ExportedGrade:
    """One grade as the exporters read it: the workload's name (a benchmark's entries are
    named by it) and the verdict the result JSON holds (`None` when no route ran), so an
    export never disagrees with the JSON."""

    workload: str
    verdict: Verdict | None
