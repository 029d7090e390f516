"""A worker process seen from the grader: started in a session of its own, waited for with a
deadline, and killed with everything it started.

The worker's session (and so process group) is its own, so the worker and
what it starts can be killed together and a Ctrl-C at the terminal reaches the
grader alone. Nothing here waits without a deadline: `wait4` is only ever
polled, between short waits on a pidfd, so a timeout and a signal are both
kept at once.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from topos_cli.harness import process_tree
from topos_cli.result.repeat import ExitFacts
from topos_cli.shared.interruption import interruptions_deferred

#: How often the parent looks whether the worker has ended, without a pidfd to wait on.
_WAIT_POLL_SECONDS = 0.01
#: The longest single wait on the worker's pidfd.
_WAIT_SLICE_SECONDS = 0.5
#: How long a killed worker may take to die before the parent stops waiting for it.
KILL_WAIT_SECONDS = 3.0


#: The process ids of workers started and not yet reaped: a worker's leftovers are never
#: another worker (two load at once, see `topos_cli.commands.grade.run_routes`).
_LIVE_WORKERS: set[int] = set()


def signal_name(number: int) -> str:
    """`SIGKILL` for 9, or `signal 64` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class WorkerProcess:
    """One worker process: its pipes, its end (exit status, rusage), and its killing."""

    def __init__(
        self,
        command: list[str],
        environment: Mapping[str, str],
        keep_input: bool = False,
        cwd: str | None = None,
    ) -> None:
        self.command = command
        self.environment = dict(environment)
        #: The worker's working directory (`None`: this process's); `python -m` puts it
        #: first on the path, so another checkout's worker runs in that checkout.
        self.cwd = cwd
        #: Whether the worker's standard input is a pipe from here (`give_turn`).
        self.keep_input = keep_input
        self.process: subprocess.Popen[bytes] | None = None
        #: The exit status (negative: the signal), once reaped; `None` if lost or not yet.
        self.returncode: int | None = None
        self.rusage: Any = None
        self.reaped = False
        #: When the worker was seen to end (`time.monotonic`).
        self.ended: float | None = None
        self.timed_out = False
        #: How many processes the worker left behind, which were killed after it.
        self.leftovers_killed = 0
        self._descendants: set[process_tree.ProcessKey] = set()
        self._children_before = process_tree.own_children()

    @property
    def pid(self) -> int | None:
        """The worker's process id, once started."""
        return None if self.process is None else self.process.pid

    def start(self) -> tuple[int, int]:
        """Starts the worker; returns the read ends of its standard output and error."""
        events_read, events_write = os.pipe()
        errors_read, errors_write = os.pipe()
        try:
            # A signal landing between fork and keeping the handle would orphan the
            # worker; deferred, it is raised once the handle is kept (and so killed).
            with interruptions_deferred():
                self.process = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE if self.keep_input else subprocess.DEVNULL,
                    stdout=events_write,
                    stderr=errors_write,
                    env=self.environment,
                    cwd=self.cwd,
                    start_new_session=True,
                    close_fds=True,
                )
        except BaseException:
            for descriptor in (events_read, errors_read):
                os.close(descriptor)
            raise
        else:
            _LIVE_WORKERS.add(self.process.pid)
        finally:
            # Only the worker holds the write ends, so its end is the pipes' end of file.
            for descriptor in (events_write, errors_write):
                os.close(descriptor)
        return events_read, errors_read

    def give_turn(self, line: bytes) -> None:
        """Writes `line` to the worker's standard input and closes it; a worker already
        gone is found out by `wait`, not here."""
        pipe = None if self.process is None else self.process.stdin
        if pipe is None:
            return
        with contextlib.suppress(OSError):  # BrokenPipeError: it ended before its turn
            pipe.write(line)
            pipe.flush()
        with contextlib.suppress(OSError):
            pipe.close()

    def wait(self, deadline: float) -> None:
        """Waits for the worker to end; at `deadline` kills it and marks it timed out.

        Never blocks in `wait4`: it waits on a pidfd (or sleeps) for at most a
        moment at a time, so the deadline is kept by this thread itself and a
        signal is handled at once.
        """
        try:
            pidfd = os.pidfd_open(self.process.pid)
        except (AttributeError, OSError):  # not Linux 5.3 or later: poll
            pidfd = None
        try:
            while not self.reap_now():
                now = time.monotonic()
                if now >= deadline:
                    self.timed_out = True
                    self.kill_group()
                    self.reap_within(KILL_WAIT_SECONDS)
                    return
                if pidfd is None:
                    time.sleep(min(_WAIT_POLL_SECONDS, deadline - now))
                else:
                    # Readable once the worker has ended.
                    select.select([pidfd], [], [], min(_WAIT_SLICE_SECONDS, deadline - now))
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def reap_now(self) -> bool:
        """Reaps the worker if it has ended, keeping its exit status and rusage; says if it has."""
        if self.reaped or self.process is None:
            return True
        try:
            pid, status, rusage = os.wait4(self.process.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: the status is lost, the end is not
            pid, status, rusage = self.process.pid, None, None
        if pid == 0:
            return False
        self.reaped = True
        self.ended = time.monotonic()
        _LIVE_WORKERS.discard(self.process.pid)
        if status is not None:
            self.returncode = os.waitstatus_to_exitcode(status)
            self.rusage = rusage
            # Popen must not wait for a process already reaped.
            self.process.returncode = self.returncode
        else:
            self.process.returncode = -signal.SIGKILL
        return True

    def reap_within(self, seconds: float) -> bool:
        """Waits up to `seconds` for the worker to end (after a kill); says whether it did."""
        give_up = time.monotonic() + seconds
        while not self.reap_now():
            if time.monotonic() >= give_up:
                return False  # unkillable for now (stuck in the kernel): not waited for
            time.sleep(_WAIT_POLL_SECONDS)
        return True

    def note_descendants(self) -> None:
        """Remembers the worker's descendants while it lives: once it dies they are orphans."""
        if self.process is not None and not self.reaped:
            self._descendants |= process_tree.descendants(self.process.pid)

    def kill_group(self) -> None:
        """Kills the worker's process group (the worker and its children), if any is left."""
        if self.process is None:
            return
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        # The worker's descendants, remembered before the kill re-parents them away.
        self.note_descendants()
        # ProcessLookupError: the group is gone already.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if not self.reaped:
            # A worker that moved itself to another group is still killed.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.process.pid, signal.SIGKILL)

    def end_leftovers(self) -> None:
        """Ends what the worker started outside its group: descendants seen while it ran,
        and orphans re-parented to this process (see `process_tree`)."""
        if self.process is None:
            return
        leftovers = self._descendants | process_tree.own_children()
        leftovers = {key for key in leftovers if key[0] not in _LIVE_WORKERS - {self.pid}}
        self.leftovers_killed = process_tree.end_processes(leftovers, self._children_before)

    def exit_facts(self) -> ExitFacts:
        """How the process ended, for the result: exit status or signal name."""
        code = self.returncode
        return ExitFacts(
            status=code if code is not None and code >= 0 else None,
            signal=signal_name(-code) if code is not None and code < 0 else None,
        )
