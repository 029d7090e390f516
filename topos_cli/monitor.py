"""Monitor: one route of a workload in one worker process, watched from the parent.

`WorkerMonitor.run` spawns `python -m topos_cli.worker` in a session (and so a
process group) of its own, so the worker and anything it starts can be killed
together and a Ctrl-C at the terminal reaches the grader alone. While it runs:

- a `PipeReader` reads the worker's JSON-lines events from its standard output;
- another keeps the tail of its standard error, for failure reports;
- a thread samples its RSS with psutil every 5 ms, for the live display and
  a timeline kept in the result (the authoritative peak is the worker's own
  `VmHWM`; sampling misses short peaks and is only the fallback where
  `/proc` is missing);
- the main thread kills the process group when `timeout` seconds have passed.

The main thread polls `os.wait4` (never blocking in it, so the deadline and
a Ctrl-C are both kept at once), which also gives the worker's rusage
(`ru_maxrss` is kept as a cross-check only: it includes the interpreter's
start-up and shutdown). How the process ended becomes the run's status: `ok`,
`failed` (exit status or signal, the worker's `error` event, the tail of its
stderr), `nonfinite`, `timed out` or `interrupted`. The result is the
`RunRecord` dict described in `topos_cli.verdict`.

Should the grader itself be killed outright (SIGKILL), the worker dies with
it: it asks Linux for a parent-death signal (`topos_cli.worker.die_with_parent`).
The parent never imports NumPy or the library: only the worker does.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

import psutil

from topos_cli import process_tree
from topos_cli.interruption import Interrupted, interruptions_deferred, interruptions_ignored
from topos_cli.pipe_reader import PipeReader
from topos_cli.rss_timeline import RssTimeline

#: How often the parent samples the worker's RSS.
SAMPLE_INTERVAL_SECONDS = 0.005

#: glibc's mmap threshold for workers unless the environment sets one: arrays above
#: 64 KiB get their own mappings and go back to the system when freed, so a route
#: that frees early is seen to be lean (glibc otherwise keeps them in its heap).
DEFAULT_MMAP_THRESHOLD = "65536"

#: The variables `--threads` sets, read by OpenBLAS, OpenMP and MKL as they load.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

#: Environment the result records (the machine's own OpenBLAS tuning is left as it is).
RECORDED_VARIABLES = (
    *THREAD_VARIABLES,
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "MALLOC_MMAP_THRESHOLD_",
)

#: Where the worker finds the grader's process id (see `topos_cli.worker.die_with_parent`).
GRADER_PID_VARIABLE = "TOPOS_GRADER_PID"

#: How many lines of a worker's standard error a failure report quotes.
STDERR_TAIL_LINES = 8

_KEPT_STDERR_LINES = 200
_LONGEST_STDERR_LINE = 400
#: An event line longer than this is cut (and so read as stray output): a ready event is
#: a few kilobytes.
_LONGEST_EVENT = 16 * 1024 * 1024

#: How often the parent looks whether the worker has ended, without a pidfd to wait on.
_WAIT_POLL_SECONDS = 0.01
#: The longest single wait on the worker's pidfd.
_WAIT_SLICE_SECONDS = 0.5
#: How long a killed worker may take to die before the parent stops waiting for it.
_KILL_WAIT_SECONDS = 3.0
#: How long the pipes may take to drain once the worker and its leftovers are gone.
_DRAIN_SECONDS = 0.5
#: How often the sampler remembers the worker's descendants (for `_end_leftovers`).
_DESCENDANTS_INTERVAL_SECONDS = 0.25


def worker_environment(
    threads: int | None, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a worker starts with: `base` (this process's by default), the
    mmap threshold unless `base` sets one, and `threads` for every BLAS if given."""
    environment = dict(os.environ if base is None else base)
    environment.setdefault("MALLOC_MMAP_THRESHOLD_", DEFAULT_MMAP_THRESHOLD)
    # The worker asks to die with this process, and checks it is still its parent.
    environment[GRADER_PID_VARIABLE] = str(os.getpid())
    if threads is not None:
        for variable in THREAD_VARIABLES:
            environment[variable] = str(threads)
    return environment


def environment_facts(environment: Mapping[str, str]) -> dict[str, str | None]:
    """The variables of `environment` that shape a measurement (`None` when unset)."""
    return {variable: environment.get(variable) for variable in RECORDED_VARIABLES}


@dataclass(frozen=True)
class WorkerRequest:
    """One run to make: which workload and route, how many steps, on which data."""

    workload: str
    route: str
    steps: int
    #: A directory of real data files, or `None` for the synthetic stand-in.
    data: str | None = None
    #: 0-based index among this route's runs.
    repeat: int = 0
    #: Seconds before the run is killed and marked timed out; `None` waits for ever.
    timeout: float | None = None

    def command(self) -> list[str]:
        """The worker's command line."""
        command = [
            sys.executable,
            "-m",
            "topos_cli.worker",
            "--workload",
            self.workload,
            "--route",
            self.route,
            "--steps",
            str(self.steps),
        ]
        if self.data is not None:
            command += ["--data", self.data]
        return command


class WorkerObserver:
    """What a display hears of a run; every method is called from some monitor thread.

    The defaults do nothing; a display overrides what it shows. An observer
    must not raise: a display that fails must not fail the measurement, so
    its errors are swallowed.
    """

    def started(self, request: WorkerRequest, pid: int) -> None:
        """The worker process `pid` started."""

    def event(self, request: WorkerRequest, event: Mapping[str, Any]) -> None:
        """The worker sent `event` (a dict with an `event` key)."""

    def sampled(self, request: WorkerRequest, rss_bytes: int) -> None:
        """The worker's RSS was sampled."""

    def finished(self, request: WorkerRequest, result: Mapping[str, Any]) -> None:
        """The run ended; `result` is its RunRecord dict."""


def signal_name(number: int) -> str:
    """`SIGKILL` for 9, or `signal 64` for a number without a name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class WorkerMonitor:
    """Runs one `WorkerRequest` in a worker process and reports how it went.

    `run()` returns the RunRecord dict. If the parent is interrupted while
    the worker runs (any exception, `Interrupted` for Ctrl-C or SIGTERM), the
    worker's process group is killed, the partial result is kept in `result`
    with status `interrupted`, and the exception propagates.
    """

    def __init__(
        self,
        request: WorkerRequest,
        environment: Mapping[str, str] | None = None,
        observer: WorkerObserver | None = None,
        sample_interval: float = SAMPLE_INTERVAL_SECONDS,
    ) -> None:
        self.request = request
        self.environment = dict(worker_environment(None) if environment is None else environment)
        self.observer = observer or WorkerObserver()
        self.sample_interval = sample_interval
        self.result: dict[str, Any] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stop_sampling = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = 0.0
        self._ended: float | None = None
        self._timeline: RssTimeline | None = None
        self._ready: dict[str, Any] | None = None
        self._ready_moment: float | None = None
        self._rss_at_ready: int | None = None
        self._sampled_peak_after_ready: int | None = None
        self._steps: list[dict[str, Any]] = []
        self._nonfinite: dict[str, Any] | None = None
        self._done: dict[str, Any] | None = None
        self._error: dict[str, Any] | None = None
        self._stray_output: collections.deque[str] = collections.deque(maxlen=_KEPT_STDERR_LINES)
        self._stderr: collections.deque[str] = collections.deque(maxlen=_KEPT_STDERR_LINES)
        self._returncode: int | None = None
        self._rusage: Any = None
        self._reaped = False
        self._timed_out = False
        self._interruption: str | None = None
        self._descendants: set[process_tree.ProcessKey] = set()
        self._children_before: set[process_tree.ProcessKey] = set()
        #: How many processes the worker left behind, which were killed after it.
        self.leftovers_killed = 0

    # -- the run ------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Runs the worker to its end and returns the run's RunRecord dict.

        Nothing here waits without a deadline: the worker is killed at its
        timeout, the pipes are read by `PipeReader`s that give up a moment after
        the worker is gone (a detached grandchild may hold them open), and every
        join is bounded, so an interrupt ends a run within a second or two.
        """
        self._started = time.monotonic()
        self._timeline = RssTimeline(self._started, self.sample_interval)
        deadline = self._started + self._timeout_seconds()
        readers: list[PipeReader] = []
        self._children_before = process_tree.own_children()
        try:
            events_read, events_write = os.pipe()
            errors_read, errors_write = os.pipe()
            try:
                # A signal landing between fork and keeping the handle would orphan the
                # worker; deferred, it is raised once the handle is kept (and so killed).
                with interruptions_deferred():
                    self._process = subprocess.Popen(
                        self.request.command(),
                        stdin=subprocess.DEVNULL,
                        stdout=events_write,
                        stderr=errors_write,
                        env=self.environment,
                        start_new_session=True,
                        close_fds=True,
                    )
            except BaseException:
                for descriptor in (events_read, errors_read):
                    os.close(descriptor)
                raise
            finally:
                # Only the worker holds the write ends, so its end is the pipes' end of file.
                for descriptor in (events_write, errors_write):
                    os.close(descriptor)
            readers = [
                PipeReader(
                    events_read, self._read_event, name="events", longest_line=_LONGEST_EVENT
                ),
                PipeReader(
                    errors_read,
                    self._read_stderr_line,
                    name="stderr",
                    longest_line=_LONGEST_STDERR_LINE,
                ),
            ]
            for reader in readers:
                reader.start()
            self._notify(self.observer.started, self.request, self._process.pid)
            self._start_thread(self._sample, None, "sampler")
            self._wait(deadline)
        except BaseException as error:
            self._interruption = (
                error.signal_name
                if isinstance(error, Interrupted)
                else "SIGINT"
                if isinstance(error, KeyboardInterrupt)
                else type(error).__name__
            )
            with interruptions_ignored():
                self._kill_group()
                self._reap_within(_KILL_WAIT_SECONDS)
            raise
        finally:
            with interruptions_ignored():
                # Whatever the worker started dies with it, in its group or not: no orphans,
                # and no process left holding the pipes open.
                self._kill_group()
                self._end_leftovers()
                self._finish_threads(readers)
                self.result = self._conclude()
                self._notify(self.observer.finished, self.request, self.result)
        return self.result

    def _timeout_seconds(self) -> float:
        """The run's time limit; infinite when there is none (or it is past any clock's reach)."""
        timeout = self.request.timeout
        if timeout is None or not math.isfinite(timeout):
            return math.inf
        return timeout

    def _start_thread(self, target: Any, stream: IO[bytes] | None, name: str) -> None:
        thread = threading.Thread(
            target=target, args=(stream,) if stream is not None else (), daemon=True, name=name
        )
        thread.start()
        self._threads.append(thread)

    def _wait(self, deadline: float) -> None:
        """Waits for the worker to end; at `deadline` kills it and marks the run timed out.

        Never blocks in `wait4`: it waits on a pidfd (or sleeps) for at most a
        moment at a time, so the deadline is kept by this thread itself and a
        signal is handled at once.
        """
        try:
            pidfd = os.pidfd_open(self._process.pid)
        except (AttributeError, OSError):  # not Linux 5.3 or later: poll
            pidfd = None
        try:
            while not self._reap_now():
                now = time.monotonic()
                if now >= deadline:
                    with self._lock:
                        self._timed_out = True
                    self._kill_group()
                    self._reap_within(_KILL_WAIT_SECONDS)
                    return
                if pidfd is None:
                    time.sleep(min(_WAIT_POLL_SECONDS, deadline - now))
                else:
                    # Readable once the worker has ended.
                    select.select([pidfd], [], [], min(_WAIT_SLICE_SECONDS, deadline - now))
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def _reap_now(self) -> bool:
        """Reaps the worker if it has ended, keeping its exit status and rusage; says if it has."""
        if self._reaped or self._process is None:
            return True
        try:
            pid, status, rusage = os.wait4(self._process.pid, os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere: the status is lost, the end is not
            pid, status, rusage = self._process.pid, None, None
        if pid == 0:
            return False
        with self._lock:
            self._reaped = True
            self._ended = time.monotonic()
            if status is not None:
                self._returncode = os.waitstatus_to_exitcode(status)
                self._rusage = rusage
                # Popen must not wait for a process already reaped.
                self._process.returncode = self._returncode
            else:
                self._process.returncode = -signal.SIGKILL
        return True

    def _reap_within(self, seconds: float) -> bool:
        """Waits up to `seconds` for the worker to end (after a kill); says whether it did."""
        give_up = time.monotonic() + seconds
        while not self._reap_now():
            if time.monotonic() >= give_up:
                return False  # unkillable for now (stuck in the kernel): not waited for
            time.sleep(_WAIT_POLL_SECONDS)
        return True

    def _kill_group(self) -> None:
        """Kills the worker's process group (the worker and its children), if any is left."""
        if self._process is None:
            return
        # The worker's descendants, remembered before the kill re-parents them away.
        if not self._reaped:
            self._descendants |= process_tree.descendants(self._process.pid)
        # ProcessLookupError: the group is gone already.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        if not self._reaped:
            # A worker that moved itself to another group is still killed.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._process.pid, signal.SIGKILL)

    def _end_leftovers(self) -> None:
        """Ends what the worker started outside its group: descendants seen while it ran,
        and orphans re-parented to this process (see `process_tree`)."""
        if self._process is None:
            return
        leftovers = self._descendants | process_tree.own_children()
        self.leftovers_killed = process_tree.end_processes(leftovers, self._children_before)

    def _finish_threads(self, readers: list[PipeReader]) -> None:
        self._stop_sampling.set()
        for reader in readers:
            # The pipes reach end of file once every holder is dead; the grace bounds the
            # wait for one that is not (a process this user may not kill, say).
            reader.stop(_DRAIN_SECONDS)
        for thread in self._threads:
            thread.join(timeout=_DRAIN_SECONDS)

    def _notify(self, method: Any, *arguments: Any) -> None:
        # A display's failure must not fail the measurement.
        with contextlib.suppress(Exception):
            method(*arguments)

    # -- the threads --------------------------------------------------------------

    def _read_event(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            # The worker sends only events on this pipe; anything else is kept as a clue.
            self._stray_output.append(line[:_LONGEST_STDERR_LINE])
            return
        self._record(event)
        self._notify(self.observer.event, self.request, event)

    def _record(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "ready":
            self._ready = event
            self._ready_moment = time.monotonic()
            self._rss_at_ready = self._timeline.last if self._timeline else None
            self._sampled_peak_after_ready = self._rss_at_ready
        elif kind == "step":
            self._steps.append(event)
        elif kind == "nonfinite":
            self._nonfinite = event
        elif kind == "done":
            self._done = event
        elif kind == "error":
            self._error = event

    def _read_stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip()
        self._stderr.append(line[:_LONGEST_STDERR_LINE])

    def _sample(self) -> None:
        try:
            process = psutil.Process(self._process.pid)
        except psutil.Error:
            return
        next_census = time.monotonic()
        while True:
            try:
                rss = process.memory_info().rss
            except psutil.Error:
                return
            if time.monotonic() >= next_census:
                # Remembered while the worker lives: once it dies they are orphans of init.
                self._descendants |= process_tree.descendants(process.pid)
                next_census = time.monotonic() + _DESCENDANTS_INTERVAL_SECONDS
            # A zombie reports no pages; that is the end, not a measurement.
            if rss > 0:
                self._timeline.add(time.monotonic(), rss)
                if self._ready_moment is not None:
                    peak = self._sampled_peak_after_ready
                    self._sampled_peak_after_ready = rss if peak is None else max(peak, rss)
                self._notify(self.observer.sampled, self.request, rss)
            if self._stop_sampling.wait(self.sample_interval):
                return

    # -- the verdict on the run ---------------------------------------------------

    def _stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        kept = [line for line in self._stderr if line.strip()]
        return kept[-lines:]

    def _error_lines(self) -> list[str]:
        """The worker's `error` event as a first line and where it was raised."""
        if self._error is None:
            return []
        kind = self._error.get("type") or "error"
        message = self._error.get("message") or ""
        lines = [f"{kind}: {message}" if message and message != kind else kind]
        where = self._error.get("where")
        if where:
            lines.append(f"at {where}")
        return lines

    def _classify(self) -> tuple[str, str | None]:
        """The run's status and, unless it is ok, a detail: first line the cause."""
        request = self.request
        reached = f"{len(self._steps)} of {request.steps} steps"
        returncode = self._returncode
        if self._interruption is not None:
            return "interrupted", f"interrupted by {self._interruption} after {reached}"
        if self._timed_out:
            lines = [
                f"timed out after {request.timeout:g} s, {reached} done; "
                f"its process group was killed"
            ]
            return "timed out", "\n".join(lines + self._stderr_tail())
        if self._nonfinite is not None:
            return "nonfinite", f"loss became {self._nonfinite.get('loss')}; training stopped there"
        complete = (
            returncode == 0
            and self._done is not None
            and self._done.get("status") == "ok"
            and len(self._steps) == request.steps
        )
        if complete:
            return "ok", None
        if returncode is None:
            cause = "did not end when killed"
        elif returncode < 0:
            cause = f"killed by {signal_name(-returncode)}"
            if -returncode == signal.SIGKILL:
                cause += " (the kernel's out-of-memory killer sends SIGKILL)"
        elif returncode == 0:
            cause = f"exit status 0 without finishing, after {reached}"
        else:
            cause = f"exit status {returncode}"
        error = self._error_lines()
        first = f"{cause}: {error[0]}" if error else f"{cause} after {reached}"
        lines = [first, *error[1:]]
        tail = self._stderr_tail()
        if self._stray_output:
            tail = [*self._stray_output[-2:], *tail]
        if tail:
            lines += ["stderr:", *tail]
        return "failed", "\n".join(lines)

    def _peak(self) -> tuple[int | None, str | None]:
        """The peak RSS of the measured steps and where it came from."""
        if self._done is None:
            return None, None
        reported = self._done.get("peak_rss_bytes")
        if isinstance(reported, int) and (self._ready or {}).get("high_water_source") == "proc":
            return reported, "VmHWM"
        return self._sampled_peak_after_ready, "sampling"

    def _conclude(self) -> dict[str, Any]:
        """The run's RunRecord dict, from everything gathered."""
        request = self.request
        status, detail = self._classify()
        ready = dict(self._ready or {})
        ready.pop("event", None)
        ready_rss = ready.get("ready_rss_bytes")
        if not isinstance(ready_rss, int):
            ready_rss = self._rss_at_ready
        peak, peak_source = self._peak() if status == "ok" else (None, None)
        loss_bits, step_seconds = [], []
        for event in self._steps:
            try:
                loss_bits.append(int(event["bits"]))
                step_seconds.append(float(event["seconds"]))
            except (KeyError, TypeError, ValueError):
                break  # a malformed step ends the trajectory rather than corrupt it
        ended = self._ended if self._ended is not None else time.monotonic()
        rusage_peak = None
        if self._rusage is not None:
            # Linux counts ru_maxrss in KiB, macOS in bytes.
            scale = 1 if sys.platform == "darwin" else 1024
            rusage_peak = int(self._rusage.ru_maxrss) * scale
        returncode = self._returncode
        facts: dict[str, Any] = {
            "pid": self._process.pid if self._process else None,
            "exit": {
                "status": returncode if returncode is not None and returncode >= 0 else None,
                "signal": signal_name(-returncode)
                if returncode is not None and returncode < 0
                else None,
            },
            "wall_seconds": ended - self._started,
            "ready_after_seconds": None
            if self._ready_moment is None
            else self._ready_moment - self._started,
            "training_seconds": (self._done or {}).get("training_seconds"),
            "timeout_seconds": request.timeout,
            "ready": ready or None,
            "peak_source": peak_source,
            "end_rss_bytes": (self._done or {}).get("end_rss_bytes"),
            "sampled_peak_rss_bytes": self._sampled_peak_after_ready,
            "ru_maxrss_bytes": rusage_peak,
            "cpu_seconds": None
            if self._rusage is None
            else self._rusage.ru_utime + self._rusage.ru_stime,
            "rss_timeline": self._timeline.to_json() if self._timeline else None,
            "nonfinite": self._nonfinite,
            "error": {key: value for key, value in self._error.items() if key != "event"}
            if self._error
            else None,
            "stderr_tail": self._stderr_tail(),
            "leftover_processes_killed": self.leftovers_killed,
        }
        return {
            "route": request.route,
            "repeat": request.repeat,
            "status": status,
            "detail": detail,
            "loss_bits": loss_bits,
            "step_seconds": step_seconds,
            "first_step_seconds": ready.get("warm_up_seconds"),
            "ready_rss_bytes": ready_rss,
            "peak_rss_bytes": peak,
            "training_delta_bytes": None,
            "facts": facts,
        }
