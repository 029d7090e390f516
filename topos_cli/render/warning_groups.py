"""Warnings grouped by cause: one line for "steps are outliers" naming every route it
touched, not one line and one remedy per route, so a quiet grade's verdict is not buried
under a score of bullets that all say the same thing. It reads the warnings as a verdict
record keeps them (`StoredWarning`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topos_cli.result.grade_result import StoredWarning


@dataclass(frozen=True)
class WarningGroup:
    """Warnings of one kind with one cause and remedy: the routes they touched, the line
    that says them all, and the remedy said once."""

    kind: str
    routes: tuple[str, ...]
    message: str
    remedy: str | None


def group_warnings(warnings: Sequence[StoredWarning]) -> list[WarningGroup]:
    """`warnings` grouped by kind, cause and remedy, in the order each group first
    appears; a group of one keeps its warning's own message."""
    groups: dict[tuple[str, str, str | None], list[StoredWarning]] = {}
    for warning in warnings:
        # A warning without a cause (machine-wide, or written by an older topos) is a
        # group of its own: there is nothing it could be said to share.
        key = (warning.kind, warning.cause or warning.message, warning.remedy)
        groups.setdefault(key, []).append(warning)
    grouped = []
    for (kind, cause, remedy), members in groups.items():
        routes = tuple(member.route for member in members if member.route is not None)
        if len(members) == 1 or not all(member.detail for member in members):
            message = "; ".join(member.message for member in members)
        else:
            message = f"{cause}: {', '.join(member.detail or '' for member in members)}"
        grouped.append(WarningGroup(kind=kind, routes=routes, message=message, remedy=remedy))
    return grouped
