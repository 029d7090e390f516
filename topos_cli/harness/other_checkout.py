"""`topos grade --against`: another checkout of topos whose routes run beside this one's.

The other checkout is a directory holding `topos/` and `topos_cli/`, or a git ref of this
repository (`main`, `HEAD~1`, a commit), checked out for the grade in a temporary `git
worktree` that is removed afterwards, whatever ends the grade. Its workers start with
that directory first on PYTHONPATH (and as their working directory, which `python -m`
puts before PYTHONPATH), so `python -m topos_cli.worker` is that checkout's worker:
a package in a new checkout, a module `topos_cli/worker.py` in an older one.

NumPy-free, as the grading parent is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from topos_cli.shared.errors import ToposUsageError

#: What the runs of the other checkout are called: `recorded@against`.
AGAINST_LABEL = "against"

#: The checkout the running `topos_cli` comes from: where a git ref is resolved.
THIS_CHECKOUT = Path(__file__).resolve().parents[2]

#: How long a git command may take (a worktree of a large history is still quick).
_GIT_SECONDS = 120.0


@dataclass(frozen=True)
class OtherCheckout:
    """The checkout `--against` named, ready for workers, and what its worker understands."""

    #: `--against` as typed.
    requested: str
    #: The directory holding its `topos/` and `topos_cli/`.
    path: str
    #: Its commit, when it is a git checkout (`None` otherwise).
    commit: str | None
    #: Whether it was made for this grade (a temporary worktree of a git ref).
    temporary: bool
    #: Whether its worker knows `--hold` (older ones start training at once).
    holds: bool
    #: Whether its worker knows `--warmup` (older ones warm up once, always).
    warms_up: bool

    def to_json(self) -> dict[str, object]:
        """What the result says of the other checkout."""
        return {
            "requested": self.requested,
            "path": self.path,
            "commit": self.commit,
            "temporary_worktree": self.temporary,
            "label": AGAINST_LABEL,
        }


def checkout_environment(environment: Mapping[str, str], checkout: str) -> dict[str, str]:
    """`environment` with `checkout` first on PYTHONPATH, so its `topos` and `topos_cli`
    are the ones a worker imports (before an editable install or this checkout)."""
    variables = dict(environment)
    rest = variables.get("PYTHONPATH")
    variables["PYTHONPATH"] = os.pathsep.join([checkout, *filter(None, [rest])])
    return variables


def _git(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs git quietly; a missing git is a failed command, not a traceback."""
    try:
        return subprocess.run(
            ["git", *arguments],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_SECONDS,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return subprocess.CompletedProcess(["git", *arguments], 1, "", str(error))


def _worker_source(path: Path) -> str | None:
    """The text of the checkout's worker command line (its protocol), or None if it has
    no worker `python -m topos_cli.worker` could run."""
    for candidate in ("topos_cli/worker/protocol.py", "topos_cli/worker.py"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            return (path / candidate).read_text(encoding="utf-8")
    return None


def is_checkout(path: Path) -> bool:
    """Whether `path` is a directory holding `topos/` and `topos_cli/`."""
    return (path / "topos").is_dir() and (path / "topos_cli").is_dir()


def resolve_ref(text: str, repository: Path = THIS_CHECKOUT) -> str | None:
    """The commit `text` names in `repository`, or None if it names none."""
    if not text or text.startswith("-"):
        return None  # never let a ref be read as one of git's options
    found = _git("rev-parse", "--verify", "--quiet", f"{text}^{{commit}}", cwd=repository)
    commit = found.stdout.strip()
    return commit if found.returncode == 0 and commit else None


def check_against(text: str, repository: Path = THIS_CHECKOUT) -> str | None:
    """Checks `--against` before anything starts: the commit of a git ref, None for a
    directory; a one-line `ToposUsageError` (exit 2) when it is neither."""
    path = Path(text).expanduser()
    if path.is_dir():
        if not is_checkout(path):
            raise ToposUsageError(
                f"--against {text}: the directory holds no topos/ and topos_cli/ "
                "(it is not a checkout of topos)"
            )
        return None
    commit = resolve_ref(text, repository)
    if commit is None:
        raise ToposUsageError(
            f"--against {text!r} is neither a checkout of topos (a directory holding topos/ "
            "and topos_cli/) nor a git ref of this repository"
        )
    return commit


@contextlib.contextmanager
def other_checkout(
    text: str, *, warmup_asked: bool, repository: Path = THIS_CHECKOUT
) -> Iterator[OtherCheckout]:
    """The checkout `--against TEXT` names, for the duration of the block: a directory as
    it is, or a git ref in a temporary worktree, removed when the block ends however it
    ends (an error, Ctrl-C, SIGTERM raised as an exception). A `ToposUsageError` when it
    is neither, when it has no worker, or when `warmup_asked` and its worker cannot be
    told a warm-up."""
    commit = check_against(text, repository)
    temporary: str | None = None
    try:
        if commit is None:
            path = Path(text).expanduser().resolve()
            own = _git("rev-parse", "HEAD", cwd=path)
            found = own.stdout.strip() if own.returncode == 0 else None
        else:
            temporary = tempfile.mkdtemp(prefix="topos-against-")
            added = _git(
                "worktree", "add", "--detach", "--force", temporary, commit, cwd=repository
            )
            if added.returncode != 0:
                reason = (added.stderr.strip().splitlines() or ["git worktree add failed"])[-1]
                raise ToposUsageError(f"--against {text}: cannot check it out: {reason}")
            path, found = Path(temporary), commit
        source = _worker_source(path)
        if source is None:
            raise ToposUsageError(f"--against {text}: the checkout has no topos_cli worker")
        warms_up = '"--warmup"' in source
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
            holds='"--hold"' in source,
            warms_up=warms_up,
        )
    finally:
        if temporary is not None:
            remove_worktree(temporary, repository)


def remove_worktree(path: str, repository: Path = THIS_CHECKOUT) -> None:
    """Removes the temporary worktree at `path`: git's record of it and its files."""
    _git("worktree", "remove", "--force", path, cwd=repository)
    shutil.rmtree(path, ignore_errors=True)
    _git("worktree", "prune", cwd=repository)
