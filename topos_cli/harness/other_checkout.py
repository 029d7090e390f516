"""`topos grade --against`: another checkout of the project graded, its routes run beside
this one's.

The project is the git repository of the working directory (`project`), not the one
topos's own code came from. `--against` names a directory holding another checkout of
it, or a git ref of it (`main`, `origin/main`, `HEAD~1`, a commit), checked out for the
grade in a temporary `git worktree` that is removed afterwards, whatever ends the grade.

The other side's workers import the project's code from that checkout and run the same
topos as this side: every path this side's workers import from that lies inside the
project (PYTHONPATH entries, relative ones read from the caller's directory; the
directory the workload's top-level package was found in, which an editable install
names; topos's own, where the project is topos) is put, at the same place inside the
checkout, first on their PYTHONPATH, and they start in the caller's directory's place
in the checkout. Where the checkout holds `topos/` and `topos_cli/` (topos grading
itself), it is first on the path, so `python -m topos_cli.worker` is that checkout's
worker: a package in a new checkout, a module `topos_cli/worker.py` in an older one.

A grade whose two sides would run the same workload code and the same topos is refused
before any worker starts (`same_code`), and again if the workers say they did.

NumPy-free, as the grading parent is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from topos.names import workload_file_of
from topos_cli.harness.project import Project, find_project, git
from topos_cli.result.checkout_facts import CheckoutFacts
from topos_cli.result.worker_facts import CodeFacts
from topos_cli.shared.errors import ToposUsageError

#: What the runs of the other checkout are called: `recorded@against`.
AGAINST_LABEL = "against"


@dataclass(frozen=True)
class OtherCheckout:
    """The checkout `--against` named, ready for workers, and what its worker understands."""

    #: `--against` as typed.
    requested: str
    #: The checkout's directory (a temporary worktree for a ref).
    path: str
    #: Its commit, when it is a git checkout (`None` otherwise).
    commit: str | None
    #: Whether it was made for this grade (a temporary worktree of a git ref).
    temporary: bool
    #: Whether its worker knows `--hold` (older ones start training at once).
    holds: bool
    #: Whether its worker knows `--warmup` (older ones warm up once, always).
    warms_up: bool
    #: The project it is a checkout of (its top-level directory), `None` if unknown.
    project: str | None = None
    #: Whether it holds `topos/` and `topos_cli/`: its workers run its own topos.
    own_topos: bool = False

    def facts(self) -> CheckoutFacts:
        """What the result says of the other checkout."""
        return CheckoutFacts(
            requested=self.requested,
            path=self.path,
            commit=self.commit,
            temporary_worktree=self.temporary,
            label=AGAINST_LABEL,
            project=self.project,
            own_topos=self.own_topos,
        )


@dataclass(frozen=True)
class SidePaths:
    """Where the other side's workers start and what they import first."""

    #: Their PYTHONPATH, every entry absolute.
    pythonpath: str
    #: Their working directory (which `python -m` puts first on the path).
    working_directory: str
    #: Their `--workload`, where it names a file by an absolute path inside the project:
    #: the same file in the checkout (a relative path is read from `working_directory`,
    #: already there). `None`: the workload as this side names it.
    workload: str | None = None


def _package_root(file: str | None, depth: int = 1) -> Path | None:
    """The directory a package whose `__init__.py` is `file` sits in."""
    return None if not file else Path(file).parents[depth]


def side_paths(
    checkout: OtherCheckout,
    environment: Mapping[str, str],
    caller: Path,
    code: CodeFacts | None,
    workload: str | None = None,
) -> SidePaths:
    """The other side's path: the checkout itself where it holds topos; then the
    directories the workload's top-level package and topos were found in, where they lie
    in the project, mapped into the checkout; then this side's PYTHONPATH, each relative
    entry read from `caller` (the directory topos was run from), those inside the project
    mapped into the checkout. They start at `caller`'s place in the checkout (its top if
    that directory is not in it). A `workload` named by an absolute path inside the project
    names the checkout's file on that side."""
    project = Project(Path(checkout.project or caller).resolve(), in_git=True)
    other = Path(checkout.path)
    entries: list[Path] = [other] if checkout.own_topos else []
    if code is not None:
        for root in (
            Path(code.workload_root) if code.workload_root else None,
            _package_root(code.topos_file),
        ):
            if root is not None and project.holds(root):
                entries.append(project.mapped(root, other))
    for entry in (environment.get("PYTHONPATH") or "").split(os.pathsep):
        if entry:
            entries.append(project.mapped(caller / entry, other))
    start = project.mapped(caller, other)
    return SidePaths(
        pythonpath=os.pathsep.join(str(entry) for entry in dict.fromkeys(entries)),
        working_directory=str(start if start.is_dir() else other),
        workload=_side_workload(project, other, workload),
    )


def _side_workload(project: Project, other: Path, workload: str | None) -> str | None:
    """`workload` naming the checkout's copy of its file, where it names a file of the
    project by an absolute path (else None: the same name serves both sides). Without
    this both sides graded the same file, and the grade was refused as "same code"."""
    named_file = None if workload is None else workload_file_of(workload)
    if named_file is None or not Path(named_file[0]).is_absolute():
        return None
    path, attribute = named_file
    if not project.holds(Path(path)):
        return None
    mapped = project.mapped(Path(path), other)
    return f"{mapped}:{attribute}" if workload != path else str(mapped)


def _worker_source(path: Path) -> str | None:
    """The text of the checkout's worker command line (its protocol), or None if it has
    no worker `python -m topos_cli.worker` could run."""
    for candidate in ("topos_cli/worker/protocol.py", "topos_cli/worker.py"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            return (path / candidate).read_text(encoding="utf-8")
    return None


def is_checkout(path: Path) -> bool:
    """Whether `path` is a directory holding `topos/` and `topos_cli/` (a checkout of topos)."""
    return (path / "topos").is_dir() and (path / "topos_cli").is_dir()


def resolve_ref(text: str, repository: Path) -> str | None:
    """The commit `text` names in `repository`, or None if it names none."""
    if not text or text.startswith("-"):
        return None  # never let a ref be read as one of git's options
    found = git("rev-parse", "--verify", "--quiet", f"{text}^{{commit}}", cwd=repository)
    commit = found.stdout.strip()
    return commit if found.returncode == 0 and commit else None


def check_against(text: str, project: Project | None = None) -> str | None:
    """Checks `--against` before anything starts: the commit a git ref names in the
    project (the working directory's repository), None for a directory; a one-line
    `ToposUsageError` (exit 2) when it is neither, or is the project's own work tree."""
    project = project or find_project()
    path = Path(text).expanduser()
    if path.is_dir():
        if path.resolve() == project.root:
            raise ToposUsageError(
                f"--against {text}: that is the project's own work tree ({project.root}), "
                "so both sides would run the same code; name another checkout or a commit"
            )
        return None
    if not project.in_git:
        raise ToposUsageError(
            f"--against {text}: the working directory {project.root} is not in a git "
            "repository, so no commit of the project can be checked out (run topos from "
            "the project's checkout, or name a directory holding another checkout)"
        )
    commit = resolve_ref(text, project.root)
    if commit is None:
        raise ToposUsageError(
            f"--against {text}: no such commit, branch or tag in the project's repository "
            f"{project.root} (nor a directory)"
        )
    return commit


def _same_tree(commit: str, project: Project) -> bool:
    """Whether the project's work tree (its tracked files) is exactly `commit`'s."""
    return git("diff", "--quiet", commit, "--", cwd=project.root).returncode == 0


def same_code(
    text: str, commit: str | None, project: Project, code: CodeFacts | None, own_topos: bool
) -> str | None:
    """Why both sides would run the same workload code and the same topos (a one-line
    reason, naming what was compared), or `None` when they would not (or cannot be told)."""
    if commit is not None and _same_tree(commit, project):
        return (
            f"--against {text}: the project's work tree ({project.root}) is the same as "
            f"{text} ({commit[:12]}), so both sides would run the same workload code and "
            "the same topos; commit or change something to compare, or name another commit"
        )
    if own_topos or code is None or not code.workload_file:
        return None
    topos_root = _package_root(code.topos_file)
    if project.holds(Path(code.workload_file)) or (
        topos_root is not None and project.holds(topos_root)
    ):
        return None
    return (
        f"--against {text}: both sides would run the same code: the workload's module "
        f"{code.workload_file} and topos ({code.topos_file}) lie outside the project "
        f"{project.root}, which is all that differs (put the workload's module in the "
        "project: PYTHONPATH=. from its checkout, or install it with pip install -e .)"
    )


@contextlib.contextmanager
def other_checkout(
    text: str,
    *,
    warmup_asked: bool,
    project: Project | None = None,
    code: CodeFacts | None = None,
) -> Iterator[OtherCheckout]:
    """The checkout `--against TEXT` names, for the duration of the block: a directory as
    it is, or a git ref of the project in a temporary worktree, removed when the block
    ends however it ends (an error, Ctrl-C, SIGTERM raised as an exception). A
    `ToposUsageError` when it is neither, when both sides would run the same code (`code`:
    what this side imports, as the preflight told), when it holds a topos without a
    worker, or when `warmup_asked` and its worker cannot be told a warm-up."""
    project = project or find_project()
    commit = check_against(text, project)
    temporary: str | None = None
    try:
        if commit is None:
            path = Path(text).expanduser().resolve()
            own = git("rev-parse", "HEAD", cwd=path)
            found = own.stdout.strip() if own.returncode == 0 else None
        else:
            path, found = project.root, commit
        own_topos = is_checkout(path)
        reason = same_code(text, commit, project, code, own_topos)
        if reason is not None:
            raise ToposUsageError(reason)
        if commit is not None:
            temporary = tempfile.mkdtemp(prefix="topos-against-")
            added = git(
                "worktree", "add", "--detach", "--force", temporary, commit, cwd=project.root
            )
            if added.returncode != 0:
                reason = (added.stderr.strip().splitlines() or ["git worktree add failed"])[-1]
                raise ToposUsageError(f"--against {text}: cannot check it out: {reason}")
            path = Path(temporary)
            own_topos = is_checkout(path)
        holds = warms_up = True  # the installed topos's worker: this one's
        if own_topos:
            source = _worker_source(path)
            if source is None:
                raise ToposUsageError(f"--against {text}: the checkout has no topos_cli worker")
            holds, warms_up = '"--hold"' in source, '"--warmup"' in source
        if warmup_asked and not warms_up:
            raise ToposUsageError(
                f"--against {text}: its worker knows no --warmup (it always warms up once); "
                "grade without --warmup"
            )
        yield OtherCheckout(
            requested=text,
            path=str(path),
            commit=found,
            temporary=temporary is not None,
            holds=holds,
            warms_up=warms_up,
            project=str(project.root),
            own_topos=own_topos,
        )
    finally:
        if temporary is not None:
            remove_worktree(temporary, project.root)


def remove_worktree(path: str, repository: Path) -> None:
    """Removes the temporary worktree at `path`: git's record of it and its files."""
    git("worktree", "remove", "--force", path, cwd=repository)
    shutil.rmtree(path, ignore_errors=True)
    git("worktree", "prune", cwd=repository)
