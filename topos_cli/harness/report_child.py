"""A grade's report, drawn beside its result by a short child process once the result is
written.

The grading parent never imports NumPy or the library (matplotlib imports
NumPy), and a report that fails to draw (matplotlib missing or broken, a
timeout, a full disk) must never lose the result or change the grade's exit
status: so the page is drawn by `python -m topos_cli.render.report_html`
in a process of its own, and a failure is one warning line.
`TOPOS_REPORT=off` skips it.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from topos_cli.result.result_file import default_report_path
from topos_cli.shared.parent_death import dies_with_parent

#: How long the child may take to draw the report before it is given up on.
REPORT_TIMEOUT_SECONDS = 120.0

#: The environment variable that turns the report off (`off`, `0`, `no` or `false`).
REPORT_VARIABLE = "TOPOS_REPORT"


def reports_wanted() -> bool:
    """Whether a grade draws its report (unless `TOPOS_REPORT` says off)."""
    value = os.environ.get(REPORT_VARIABLE, "").strip().lower()
    return value not in ("off", "0", "no", "false")


#: The drawing child's module (`python -m`).
REPORT_MODULE = "topos_cli.render.report_html"


def _start_drawing(arguments: list[str]) -> subprocess.Popen[str]:
    """The drawing child, in a session of its own (a Ctrl-C or a hang-up is the grade's to
    handle), killed by the kernel if the grade dies without ending it (`dies_with_parent`):
    started before the command line is read and often stopped, it must never stay behind."""
    return subprocess.Popen(
        [sys.executable, "-m", REPORT_MODULE, *arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env={**os.environ, "MPLBACKEND": "Agg"},
        start_new_session=True,
        preexec_fn=dies_with_parent(),
    )


class ReportChild:
    """The drawing child started as the grade begins, so that loading matplotlib (half
    a report's time) happens while the grade starts and the workers load rather than
    after the last run.

    It must not run beside a measured run: `pause()` before a worker's turn stops it
    (SIGSTOP) unless it has already loaded and is only waiting; `resume()` lets it go on.
    """

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self._loaded = False
        self._stopped = False

    @classmethod
    def start(cls) -> ReportChild:
        """The child `start_early` started, else a new one; one that cannot start is
        noted, and the report is then drawn by a fresh child as before."""
        early = _Early.claim()
        if early is not None:
            return early
        child = cls()
        with contextlib.suppress(OSError):
            child.process = _start_drawing(["--when-told"])
        return child

    @classmethod
    def start_early(cls) -> None:
        """Starts the child as a `topos grade` command line begins, before the
        command-line framework is even imported: the grading parent's own start-up (some
        0.3 s on one core) leaves the other core to the child's loading.
        The grade takes it with `start()`; `end_early()` ends one no grade will take,
        and one never taken is ended when this process exits."""
        if _Early.child is None and reports_wanted():
            _Early.child = cls.start()
            atexit.register(cls.end_early)

    @staticmethod
    def end_early() -> None:
        """Ends the child `start_early` started if no grade has taken it (a grade that
        draws no report, a frontier, a usage error)."""
        child = _Early.claim()
        if child is not None:
            child.close()

    def has_loaded(self, timeout: float = 0.0) -> bool:
        """Whether the child has said `loaded`, waiting at most `timeout` seconds for it."""
        process = self.process
        if self._loaded or process is None or self._stopped:
            return self._loaded
        readable, _, _ = select.select([process.stdout], [], [], timeout)
        self._loaded = bool(readable) and process.stdout.readline().strip() == "loaded"
        return self._loaded

    def pause(self) -> None:
        """Stops the child if it is still loading; a loaded child only waits on a pipe."""
        process = self.process
        if process is None or self._stopped or process.poll() is not None or self.has_loaded():
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGSTOP)
            self._stopped = True

    def resume(self) -> None:
        """Lets a stopped child go on loading (the runs are over)."""
        process = self.process
        if process is not None and self._stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)
            self._stopped = False

    def take(self) -> subprocess.Popen[str] | None:
        """The child, running again, for `ReportDrawing`; None if it has died."""
        self.resume()
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return None
        return process

    def close(self) -> None:
        """Ends a child that drew nothing (an interrupted or failed grade): its input ends."""
        self.resume()
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=2.0)


class ReportDrawing:
    """A report being drawn: the child has been told (or started) and draws while the
    grade prints its verdict; `finish()` waits for the page."""

    def __init__(
        self, result_path: str | os.PathLike[str], child: ReportChild | None = None
    ) -> None:
        self.result_path = result_path
        self.report_path = default_report_path(result_path)
        self.process = None if child is None else child.take()
        self._error: OSError | None = None
        if self.process is None:
            try:
                self.process = _start_drawing([str(result_path), "--html", str(self.report_path)])
            except OSError as error:
                self._error = error
            return
        told = {"result": str(result_path), "html": str(self.report_path)}
        # Told now, so that it draws while the grade prints; `finish` closes its input. A
        # child that has died meanwhile says why when `finish` reads what it wrote.
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(json.dumps(told) + "\n")
            self.process.stdin.flush()

    def finish(self, stderr: TextIO, timeout: float = REPORT_TIMEOUT_SECONDS) -> Path | None:
        """The report's path once drawn, or `None` after writing one warning line to
        `stderr` when it could not be drawn; never raises for a drawing failure."""
        process = self.process
        try:
            if self._error is not None or process is None:
                raise self._error or OSError("no drawing process")
            try:
                _, errors = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                raise
        except subprocess.TimeoutExpired:
            reason = f"it took longer than {timeout:g} s"
        except OSError as error:
            reason = f"the drawing process could not start: {error.strerror or error}"
        else:
            if process.returncode == 0:
                return self.report_path
            lines = [line for line in errors.splitlines() if line.strip()]
            reason = (
                lines[-1].removeprefix("topos: error: ")
                if lines
                else (f"the drawing process ended with status {process.returncode}")
            )
        stderr.write(
            f"topos: warning: the report could not be drawn ({reason}); the result is "
            f"intact, and `topos report {self.result_path}` can draw it later\n"
        )
        return None


class _Early:
    """The child `ReportChild.start_early` started, until a grade takes it."""

    child: ReportChild | None = None

    @classmethod
    def claim(cls) -> ReportChild | None:
        """The early child, now the caller's; None if there is none."""
        child, cls.child = cls.child, None
        return child


def draw_report_in_child(
    result_path: str | os.PathLike[str],
    stderr: TextIO,
    timeout: float = REPORT_TIMEOUT_SECONDS,
    child: ReportChild | None = None,
) -> Path | None:
    """Draws the report of the result at `result_path` beside it, in a child process
    (`child`'s, started early, if it is alive; else a fresh one).

    Returns the report's path, or `None` after writing one warning line to
    `stderr` when it could not be drawn; never raises for a drawing failure.
    """
    return ReportDrawing(result_path, child).finish(stderr, timeout)
