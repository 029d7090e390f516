"""Which commit a result graded, in words: what history groups by and the report shows."""

from __future__ import annotations

from topos_cli.result.grade_result import GradeResult


def describe_commit(result: GradeResult) -> str:
    """The project's commit, e.g. `a8856fe24f89` or `a8856fe24f89 (uncommitted changes)`:
    the commit of the project graded (the working directory's repository), or, in a
    result older than that record, of topos's own checkout; `unknown commit` if none."""
    project = result.project
    if project is not None and project.commit:
        return project.commit[:12] + (" (uncommitted changes)" if project.dirty else "")
    git = result.host.git
    if git is None or not git.commit:
        return "unknown commit"
    return git.commit[:12] + (" (uncommitted changes)" if git.dirty else "")
