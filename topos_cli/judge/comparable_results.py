"""Whether two results can be compared (one workload, graded at the same steps, data and
shards: history never mixes them either), and what differs between them besides the code."""

from __future__ import annotations

from typing import Any

from topos_cli.result.grade_result import GradeResult
from topos_cli.shared.errors import IncomparableResultsError


def check_comparable(old: GradeResult, new: GradeResult, old_source: str, new_source: str) -> None:
    """Raises `IncomparableResultsError` (exit 2, one line naming the sources) when the two
    results are of other workloads, or graded at other steps, data or shards."""
    old_workload, new_workload = old.workload.name, new.workload.name
    if old_workload != new_workload:
        raise IncomparableResultsError(
            f"cannot compare results of different workloads: {old_source} is {old_workload}, "
            f"{new_source} is {new_workload}"
        )
    for label, old_value, new_value in _settings(old, new):
        if old_value is not None and new_value is not None and old_value != new_value:
            raise IncomparableResultsError(
                f"cannot compare results graded at different {label}: {old_source} has "
                f"{old_value}, {new_source} has {new_value} (grade both alike, as history "
                "never mixes them)"
            )


def _settings(old: GradeResult, new: GradeResult) -> list[tuple[str, Any, Any]]:
    """The settings two results must share to be compared: steps, data, shards (a value a
    result does not record is `None`, and never refused)."""

    def fingerprint(result: GradeResult) -> str | None:
        data = result.workload.data
        return data.fingerprint[:12] if data is not None and data.fingerprint else None

    def shards(result: GradeResult, routes: set[str] | None = None) -> str | None:
        found = {
            route: facts.shards
            for route, facts in result.routes.items()
            if facts.shards is not None and (routes is None or route in routes)
        }
        return None if not found else ", ".join(f"{r} {n}" for r, n in sorted(found.items()))

    both_shards = [shards(old), shards(new)]
    if None not in both_shards:
        # Only the routes both graded: a route added is a note, not other settings.
        common = set(old.routes) & set(new.routes)
        both_shards = [shards(old, common), shards(new, common)]
    return [
        ("steps", old.steps, new.steps),
        ("data (fingerprint)", fingerprint(old), fingerprint(new)),
        ("shards", *both_shards),
    ]


def setting_notes(old: GradeResult, new: GradeResult) -> list[str]:
    """What differs between the two grades besides the code: steps, data, threads, host, commit."""
    notes = []

    def differs(label: str, old_value: Any, new_value: Any) -> None:
        if old_value != new_value:
            notes.append(f"{label} differs: {old_value} then {new_value}")

    differs("steps", old.steps, new.steps)
    differs("data", _data_of(old), _data_of(new))
    differs("threads", old.settings.threads, new.settings.threads)
    differs("CPU", old.host.cpu_model, new.host.cpu_model)
    return notes


def _data_of(result: GradeResult) -> dict[str, Any] | None:
    """The data a result was graded on, as a comparable value."""
    data = result.workload.data
    return None if data is None else data.to_json()
