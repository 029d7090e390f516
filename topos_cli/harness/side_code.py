"""What each side of `topos grade --against` imported: the workload's module file and
topos's, as their workers said when ready, with the commit of the checkout each lies in.

The result records both sides (`against.sides`), so a reader sees which code was
compared; two sides that imported the very same files ran the same code, and the grade
is refused (exit 2) rather than judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from topos_cli.harness.project import commit_of
from topos_cli.result.grade_result import SideCode
from topos_cli.result.repeat import Repeat
from topos_cli.result.worker_facts import CodeFacts


def _first_code(repeats: Sequence[Repeat]) -> CodeFacts | None:
    """The code facts of the first run whose worker told them."""
    for repeat in repeats:
        ready = repeat.facts.ready
        if ready is not None and ready.code is not None:
            return ready.code
    return None


def side_code(repeats: Sequence[Repeat]) -> SideCode:
    """What the workers of `repeats` (one side) imported, and the commits of those files."""
    code = _first_code(repeats)
    if code is None:
        return SideCode()
    workload = commit_of(Path(code.workload_file)) if code.workload_file else (None, None)
    topos = commit_of(Path(code.topos_file)) if code.topos_file else (None, None)
    return SideCode(
        code=code,
        workload_commit=workload[0],
        workload_dirty=workload[1],
        topos_commit=topos[0],
        topos_dirty=topos[1],
    )


def same_code_ran(requested: str, this: SideCode, other: SideCode) -> str | None:
    """The one line that refuses a grade whose two sides imported the very same workload
    file and the same topos, or `None` when they did not (or a side did not say)."""
    if this.code is None or other.code is None:
        return None
    mine, theirs = this.code, other.code
    if mine.workload_file is None or mine.topos_file is None:
        return None
    if (mine.workload_file, mine.topos_file) != (theirs.workload_file, theirs.topos_file):
        return None
    return (
        f"--against {requested}: both sides imported the same code (the workload's module "
        f"{mine.workload_file}, topos {mine.topos_file}): nothing was compared"
    )
