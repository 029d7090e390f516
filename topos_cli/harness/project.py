"""The project being graded: the git repository of the working directory.

`topos grade --against REF` resolves REF here, not in the repository topos's own code
came from: a user grades their project, and topos is only the tool. A result names
the project's commit (and whether its tree had uncommitted changes) beside topos's own
version, and history groups grades by it. Outside git, the working directory itself is
the project (a directory named to `--against` is then mapped from it).

NumPy-free, as the grading parent is.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from topos_cli.result.grade_result import ProjectFacts

#: How long a git command may take (a worktree of a large history is still quick).
GIT_SECONDS = 120.0


def git(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs git quietly in `cwd`; a missing git, or one that hangs, is a failed command,
    not a traceback."""
    try:
        return subprocess.run(
            ["git", *arguments],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return subprocess.CompletedProcess(["git", *arguments], 1, "", str(error))


def _output(*arguments: str, cwd: Path) -> str | None:
    """The stripped output of a git command that succeeded, else `None`."""
    completed = git(*arguments, cwd=cwd)
    return completed.stdout.strip() if completed.returncode == 0 else None


@dataclass(frozen=True)
class Project:
    """The project a grade runs in: its top-level directory, and whether git keeps it."""

    #: The repository's top-level directory, or the working directory outside git.
    root: Path
    #: Whether `root` is a git repository's work tree.
    in_git: bool

    def holds(self, path: Path) -> bool:
        """Whether `path` (resolved) lies inside the project."""
        return path.resolve().is_relative_to(self.root)

    def mapped(self, path: Path, checkout: Path) -> Path:
        """`path`, if it lies inside the project, at the same place inside `checkout` (another
        checkout of the project); else `path` itself."""
        resolved = path.resolve()
        if not resolved.is_relative_to(self.root):
            return resolved
        return checkout / resolved.relative_to(self.root)

    def facts(self) -> ProjectFacts | None:
        """The project's repository, commit and dirty flag, for the result (`None` outside git)."""
        if not self.in_git:
            return None
        commit = _output("rev-parse", "HEAD", cwd=self.root)
        if not commit:
            return None
        status = _output("status", "--porcelain", "--untracked-files=no", cwd=self.root)
        remote = _output("config", "--get", "remote.origin.url", cwd=self.root)
        return ProjectFacts(
            name=self.root.name,
            repository=remote or str(self.root),
            root=str(self.root),
            commit=commit,
            dirty=None if status is None else bool(status),
        )


def find_project(directory: Path | None = None) -> Project:
    """The project `directory` (the working directory by default) belongs to: the top of
    its git work tree, or `directory` itself outside git."""
    here = Path(directory if directory is not None else os.getcwd()).resolve()
    top = _output("rev-parse", "--show-toplevel", cwd=here)
    if top:
        return Project(Path(top).resolve(), in_git=True)
    return Project(here, in_git=False)


def commit_of(path: Path) -> tuple[str | None, bool | None]:
    """The commit of the git work tree holding `path` (a file or a directory), and whether
    that tree has uncommitted changes; `(None, None)` outside git."""
    directory = path if path.is_dir() else path.parent
    if not directory.is_dir():
        return None, None
    commit = _output("rev-parse", "HEAD", cwd=directory)
    if not commit:
        return None, None
    status = _output("status", "--porcelain", "--untracked-files=no", cwd=directory)
    return commit, None if status is None else bool(status)
