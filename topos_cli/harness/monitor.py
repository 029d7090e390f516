"""Monitor: one run of one route in a worker process, watched from the parent.

While the worker runs, `PipeReader`s read its events (`protocol`) and keep the
tail of its standard error, a thread samples its RSS every 5 ms (plus, with shard
processes, their private memory every 100 ms: the whole route's; for the display and
a timeline in the result; the authoritative peak is the worker's own `VmHWM`, sampling
only the fallback where `/proc` is missing), and
`WorkerProcess` keeps the deadline and kills what is left. How it all ended
becomes a `Repeat`. The parent never imports NumPy or the library.
"""

from __future__ import annotations

import collections
import contextlib
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import psutil

from topos.system import process_memory
from topos_cli.harness.helper_thread import start_helper
from topos_cli.harness.machine_load import MachineReading, machine_facts, read_machine
from topos_cli.harness.pipe_reader import PipeReader
from topos_cli.harness.rss_timeline import RssTimeline
from topos_cli.harness.run_classification import classify_run, measured_peak
from topos_cli.harness.worker_observer import WorkerObserver
from topos_cli.harness.worker_process import KILL_WAIT_SECONDS, WorkerProcess
from topos_cli.harness.worker_request import WorkerRequest, request_environment
from topos_cli.harness.worker_stderr import pass_on_warning
from topos_cli.result.repeat import Repeat, RunFacts
from topos_cli.shared.interruption import Interrupted, interruptions_ignored
from topos_cli.worker import protocol

#: How often the parent samples the worker's RSS.
SAMPLE_INTERVAL_SECONDS = 0.005


#: How many lines of a worker's standard error a failure report quotes.
STDERR_TAIL_LINES = 8

_KEPT_STDERR_LINES = 200
_LONGEST_STDERR_LINE = 400
#: An event line longer than this is cut (and so read as stray output): a ready event is
#: a few kilobytes.
_LONGEST_EVENT = 16 * 1024 * 1024

#: How long the pipes may take to drain once the worker and its leftovers are gone.
_DRAIN_SECONDS = 0.5
#: How often a held worker's sampler looks whether the worker's turn has come.
_HELD_POLL_SECONDS = 0.05
#: How often the sampler remembers the worker's descendants (for `WorkerProcess.end_leftovers`).
_DESCENDANTS_INTERVAL_SECONDS = 0.25
#: How often the sampler reads the private memory of a worker's shard processes (walking
#: a process's pages takes a fraction of a millisecond: not every 5 ms).
_SHARD_PROCESSES_INTERVAL_SECONDS = 0.1


class WorkerMonitor:
    """Runs one `WorkerRequest` in a worker process and reports how it went.

    `run()` returns the run's `Repeat`. If the parent is interrupted while
    the worker runs (any exception, `Interrupted` for Ctrl-C or SIGTERM), the
    worker's process group is killed, the partial record is kept in `result`
    with status `interrupted`, and the exception propagates.
    """

    def __init__(
        self,
        request: WorkerRequest,
        environment: Mapping[str, str] | None = None,
        observer: WorkerObserver | None = None,
        sample_interval: float = SAMPLE_INTERVAL_SECONDS,
        hold: bool = False,
    ) -> None:
        self.request = request
        #: Whether the worker waits, once loaded, until `run()` gives it its turn.
        self.hold = hold
        self.environment = request_environment(request, environment)
        self.observer = observer or WorkerObserver()
        self.sample_interval = sample_interval
        self.result: Repeat | None = None
        self._worker: WorkerProcess | None = None
        self._stop_sampling = threading.Event()
        self._sampler: threading.Thread | None = None
        self._started = 0.0
        self._timeline: RssTimeline | None = None
        self._ready: protocol.Ready | None = None
        self._ready_moment: float | None = None
        self._rss_at_ready: int | None = None
        self._sampled_peak_after_ready: int | None = None
        self._steps: list[protocol.Step] = []
        #: The machine's CPU counters at ready and at done: what others did meanwhile.
        self._machine_at_ready: MachineReading | None = None
        self._machine_at_done: MachineReading | None = None
        self._nonfinite: protocol.Nonfinite | None = None
        self._done: protocol.Done | None = None
        self._error: protocol.Error | None = None
        self._stray_output: collections.deque[str] = collections.deque(maxlen=_KEPT_STDERR_LINES)
        self._stderr: collections.deque[str] = collections.deque(maxlen=_KEPT_STDERR_LINES)
        self._interruption: str | None = None
        self._readers: list[PipeReader] = []
        self._turn_given = threading.Event()
        self._loaded = threading.Event()
        self._loaded_moment: float | None = None
        self._turn_moment: float | None = None
        #: Seconds the worker waited at its hold (not its own time: not in its figures).
        self._held = 0.0
        #: Seconds of its start-up spent while another worker loaded beside it.
        self._overlapped = 0.0
        # What the observer would have heard before the worker's turn, told at the turn.
        self._withheld: list[tuple[Any, tuple[Any, ...]]] = []
        self._notes_lock = threading.Lock()

    @property
    def loaded_moment(self) -> float | None:
        """When a held worker said it had loaded (`time.monotonic`), if it did."""
        return self._loaded_moment

    @property
    def ready_moment(self) -> float | None:
        """When the worker said it was ready (`time.monotonic`), if it did."""
        return self._ready_moment

    @property
    def leftovers_killed(self) -> int:
        """How many processes the worker left behind, which were killed after it."""
        return 0 if self._worker is None else self._worker.leftovers_killed

    def start(self) -> None:
        """Starts the worker without waiting for it. A held worker then loads and waits for
        its turn (`supervise`); what the observer would hear of it meanwhile is told then."""
        if self._worker is not None:
            return
        self._started = time.monotonic()
        self._timeline = RssTimeline(self._started, self.sample_interval)
        command = replace(self.request, hold=self.hold).command()
        worker = self._worker = WorkerProcess(
            command, self.environment, keep_input=self.hold, cwd=self.request.working_directory
        )
        events, errors = worker.start()
        self._readers = [
            PipeReader(events, self._read_event, name="events", longest_line=_LONGEST_EVENT),
            PipeReader(
                errors, self._read_stderr_line, name="stderr", longest_line=_LONGEST_STDERR_LINE
            ),
        ]
        for reader in self._readers:
            reader.start()
        self._notify(self.observer.started, self.request, worker.pid)
        self._sampler = threading.Thread(target=self._sample, daemon=True, name="sampler")
        start_helper(self._sampler)

    def wait_loaded(self) -> None:
        """Waits until the held worker has loaded (or ended, or reached its time limit):
        a worker loading beside another's measured steps would disturb them."""
        deadline = self._started + self._timeout_seconds()
        while not self._loaded.is_set() and not self._worker.reap_now():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return  # its own run will find it out of time
            self._loaded.wait(min(remaining, 0.05))

    def abandon(self) -> None:
        """Ends a started worker that will get no turn, quietly: no record, no report."""
        if self._worker is None or self.result is not None:
            return
        with interruptions_ignored():
            self._worker.kill_group()
            self._worker.reap_within(KILL_WAIT_SECONDS)
            self._worker.end_leftovers()
            self._finish_threads(self._readers)

    def supervise(
        self,
        beside: WorkerMonitor | None = None,
        before_turn: Callable[[], None] | None = None,
    ) -> Repeat:
        """Supervises the worker to its end and returns its `Repeat`. A held worker's
        turn comes once it has loaded, and so has `beside` (a held worker started with
        this one), and `before_turn` has quietened whatever else the grade runs.

        Nothing here waits without a deadline: the worker is killed at its
        timeout, the pipes are read by `PipeReader`s that give up a moment after
        the worker is gone (a detached grandchild may hold them open), and every
        join is bounded, so an interrupt ends a run within a second or two.
        """
        try:
            self.start()
            worker = self._worker
            if self.hold:
                self.wait_loaded()
            if beside is not None:
                beside.wait_loaded()
            if before_turn is not None:
                before_turn()
            self._give_turn(beside)
            # The worker's own time is limited, not the time it waited for its turn.
            worker.wait(self._started + self._held + self._timeout_seconds())
        except BaseException as error:
            self._interruption = (
                error.signal_name
                if isinstance(error, Interrupted)
                else "SIGINT"
                if isinstance(error, KeyboardInterrupt)
                else type(error).__name__
            )
            with interruptions_ignored():
                if self._worker is not None:
                    self._worker.kill_group()
                    self._worker.reap_within(KILL_WAIT_SECONDS)
            raise
        finally:
            with interruptions_ignored():
                # Whatever the worker started dies with it, in its group or not: no orphans,
                # and no process left holding the pipes open.
                if self._worker is not None:
                    self._worker.kill_group()
                    self._worker.end_leftovers()
                self._finish_threads(self._readers)
                self.result = self._conclude()
                self._notify(self.observer.finished, self.request, self.result)
        return self.result

    def _give_turn(self, beside: WorkerMonitor | None) -> None:
        """Lets a held worker go on; tells the observer what it withheld until now."""
        now = time.monotonic()
        if self.hold:
            loaded = self._loaded_moment
            self._held = now - loaded if loaded is not None else 0.0
            self._worker.give_turn(protocol.GO_LINE)
        if beside is not None:
            # How long both loaded at once: on the clock, the pair's start-ups took their
            # own times less this.
            both_ended = min(self._loaded_moment or now, beside._loaded_moment or now)
            both_began = max(self._started, beside._started)
            beside._overlapped = max(0.0, both_ended - both_began)
        self._turn_moment = now
        with self._notes_lock:
            self._turn_given.set()
            withheld, self._withheld = self._withheld, []
        for method, arguments in withheld:
            self._notify(method, *arguments)

    def _timeout_seconds(self) -> float:
        """The run's time limit; infinite when there is none (or it is past any clock's reach)."""
        timeout = self.request.timeout
        if timeout is None or not math.isfinite(timeout):
            return math.inf
        return timeout

    def _finish_threads(self, readers: list[PipeReader]) -> None:
        self._stop_sampling.set()
        for reader in readers:
            # The pipes reach end of file once every holder is dead; the grace bounds the
            # wait for one that is not (a process this user may not kill, say).
            reader.stop(_DRAIN_SECONDS)
        if self._sampler is not None:
            self._sampler.join(timeout=_DRAIN_SECONDS)

    def _notify(self, method: Any, *arguments: Any) -> None:
        if self.hold and not self._turn_given.is_set():
            with self._notes_lock:
                if not self._turn_given.is_set():
                    # Before its turn a held worker's RSS samples are not news.
                    if method != self.observer.sampled:
                        self._withheld.append((method, arguments))
                    return
        # A display's failure must not fail the measurement.
        with contextlib.suppress(Exception):
            method(*arguments)

    # -- the threads --------------------------------------------------------------

    def _read_event(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return
        event = protocol.decode(line)
        if event is None:
            # The worker sends only events on this pipe; anything else is kept as a clue.
            self._stray_output.append(line[:_LONGEST_STDERR_LINE])
            return
        if isinstance(event, protocol.Loaded):
            self._loaded_moment = time.monotonic()
            self._loaded.set()
            return
        if isinstance(event, protocol.Ready):
            self._ready = event
            self._ready_moment = time.monotonic()
            self._rss_at_ready = self._timeline.last if self._timeline else None
            self._sampled_peak_after_ready = self._rss_at_ready
            self._machine_at_ready = read_machine()
        elif isinstance(event, protocol.Step):
            self._steps.append(event)
        elif isinstance(event, protocol.Nonfinite):
            self._nonfinite = event
        elif isinstance(event, protocol.Done):
            self._machine_at_done = read_machine()
            self._done = event
        elif isinstance(event, protocol.Error):
            self._error = event
        self._notify(self.observer.event, self.request, event)

    def _read_stderr_line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip()
        self._stderr.append(line[:_LONGEST_STDERR_LINE])
        pass_on_warning(line, _LONGEST_STDERR_LINE)

    def _sample(self) -> None:
        try:
            process = psutil.Process(self._worker.pid)
        except psutil.Error:
            return
        next_census = next_shards = time.monotonic()
        shards_private = 0
        while True:
            try:
                rss = process.memory_info().rss
            except psutil.Error:
                return
            if time.monotonic() >= next_census:
                self._worker.note_descendants()
                next_census = time.monotonic() + _DESCENDANTS_INTERVAL_SECONDS
            # A route with shard processes is the worker and them, as every figure of it
            # is (see the worker): once ready names them, their private memory is added.
            shard_pids = self._ready.facts.shard_process_ids if self._ready is not None else []
            if shard_pids and time.monotonic() >= next_shards:
                shards_private = sum(process_memory.private_bytes(pid) or 0 for pid in shard_pids)
                next_shards = time.monotonic() + _SHARD_PROCESSES_INTERVAL_SECONDS
            rss += shards_private
            # A zombie reports no pages; that is the end, not a measurement.
            if rss > 0:
                # The run's clock leaves out the wait for its turn.
                self._timeline.add(time.monotonic() - self._held, rss)
                if self._ready_moment is not None:
                    peak = self._sampled_peak_after_ready
                    self._sampled_peak_after_ready = rss if peak is None else max(peak, rss)
                self._notify(self.observer.sampled, self.request, rss)
            if self._stop_sampling.wait(self.sample_interval):
                return
            # Loaded and waiting for its turn, the worker's memory does not move.
            while self._loaded.is_set() and not self._turn_given.is_set():
                if self._stop_sampling.wait(_HELD_POLL_SECONDS):
                    return

    # -- the record of the run ----------------------------------------------------

    def _stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> list[str]:
        kept = [line for line in self._stderr if line.strip()]
        return kept[-lines:]

    def _classify(self) -> tuple[str, str | None]:
        """The run's status and, unless it is ok, a detail: first line the cause."""
        return classify_run(
            self.request,
            steps_done=len(self._steps),
            returncode=self._worker.returncode,
            timed_out=self._worker.timed_out,
            interruption=self._interruption,
            nonfinite=self._nonfinite,
            done=self._done,
            error=self._error,
            stderr_tail=self._stderr_tail(),
            stray_output=list(self._stray_output)[-2:],
        )

    def _peak(self) -> tuple[int | None, str | None]:
        """The peak RSS of the measured steps and where it came from."""
        return measured_peak(self._done, self._ready, self._sampled_peak_after_ready)

    def _conclude(self) -> Repeat:
        """The run's record, from everything gathered."""
        request, worker = self.request, self._worker
        status, detail = self._classify()
        ready = self._ready
        ready_rss = ready.facts.ready_rss_bytes if ready is not None else None
        if ready_rss is None:
            ready_rss = self._rss_at_ready
        peak, peak_source = self._peak() if status == "ok" else (None, None)
        ended = worker.ended if worker.ended is not None else time.monotonic()
        # A held worker's own time: what it waited for its turn is left out.
        started = self._started + self._held
        rusage = worker.rusage
        # Linux counts ru_maxrss in KiB, macOS in bytes.
        scale = 1 if sys.platform == "darwin" else 1024
        # CPU times and preemptions count only when every step has one (an older worker
        # sends none): a partial series could not be lined up with the step times.
        step_cpu = [step.cpu_seconds for step in self._steps]
        step_cpu = step_cpu if None not in step_cpu else []
        switches = [step.involuntary_switches for step in self._steps]
        switches = switches if None not in switches else []
        facts = RunFacts(
            pid=worker.pid,
            exit=worker.exit_facts(),
            wall_seconds=ended - started,
            ready_after_seconds=None
            if self._ready_moment is None
            else self._ready_moment - started,
            held_seconds=self._held,
            start_up_overlapped_seconds=self._overlapped,
            training_seconds=None if self._done is None else self._done.training_seconds,
            timeout_seconds=request.timeout,
            ready=None if ready is None else ready.facts,
            peak_source=peak_source,
            end_rss_bytes=None if self._done is None else self._done.end_rss_bytes,
            high_water_bytes=None if self._done is None else self._done.high_water_bytes,
            step_peak_rss_bytes=None if self._done is None else self._done.step_peak_rss_bytes,
            shard_processes_peak_private_bytes=None
            if self._done is None
            else self._done.shard_processes_peak_private_bytes,
            sampled_peak_rss_bytes=self._sampled_peak_after_ready,
            ru_maxrss_bytes=None if rusage is None else int(rusage.ru_maxrss) * scale,
            cpu_seconds=None if rusage is None else rusage.ru_utime + rusage.ru_stime,
            rss_timeline=self._timeline.facts() if self._timeline else None,
            nonfinite=None if self._nonfinite is None else self._nonfinite.facts(),
            error=None if self._error is None else self._error.details(),
            stderr_tail=self._stderr_tail(),
            leftover_processes_killed=worker.leftovers_killed,
            machine=machine_facts(
                self._machine_at_ready, self._machine_at_done, sum(step_cpu) if step_cpu else None
            ),
            shard_involuntary_switches=None
            if self._done is None
            else self._done.shard_involuntary_switches,
        )
        return Repeat(
            route=request.label,
            repeat=request.repeat,
            status=status,
            detail=detail,
            loss_bits=tuple(step.bits for step in self._steps),
            step_seconds=tuple(step.seconds for step in self._steps),
            first_step_seconds=None if ready is None else ready.facts.warm_up_seconds,
            step_cpu_seconds=tuple(step_cpu),
            step_involuntary_switches=tuple(switches),
            ready_rss_bytes=ready_rss,
            peak_rss_bytes=peak,
            facts=facts,
        )
