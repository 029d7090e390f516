"""Counting the work of a route's measured steps: one worker run under callgrind.

`grade --measure instructions` runs, after the timed runs, one more worker per route
under `valgrind --tool=callgrind --instr-atstart=no`: nothing is instrumented until the
worker's first measured step (`step_counter`), so start-up, data loading, lowering and
warm-up count nothing. Each measured step is dumped under its own label; a step's count
is the sum of its dumps over every process of the route (the worker and, forked from it,
its shard processes).

Where a counting run's time goes (mnist, 2-core Xeon): Valgrind runs even uninstrumented
code through its translator, so what made it slow was not the instrumentation but what
ran: OpenBLAS's fused multiply-add kernels (a step 1.9 s under Valgrind, against 14 ms
natively; 0.15 s with the `COUNTING_BLAS_CORE` kernel, see `counting_environment`). What
remains is Valgrind's start of the interpreter, compiling and importing its modules
(some ten seconds, kept for determinism: see `counting_environment`), one warm-up step
and the counted steps.

A counting worker computes on one BLAS thread (OpenMP and MKL too): a thread that spins
while it waits executes instructions, so more threads would make counts follow the load.
Python's hash seed is pinned, and the address space is not randomised (Linux's
`ADDR_NO_RANDOMIZE`), for the same reason: the order a set of objects is walked in
follows their hashes and addresses, and so the work of a step that walks one. The worker
itself keeps the rest alike from run to run (`step_counter`, `route_worker`): the type
attribute cache emptied and the garbage collector run before each counted step, no
event written until the last, no memory measured (its reservations follow the heap).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from topos_cli.harness.client_requests import ClientRequestsError, client_requests_library
from topos_cli.harness.worker_request import WorkerRequest, request_environment
from topos_cli.result.instruction_counts import RouteCounts
from topos_cli.worker import protocol
from topos_cli.worker.step_counter import CLIENT_REQUESTS_VARIABLE

#: Measured steps a counting run counts (after its warm-up): a deterministic step needs
#: few samples, and each costs callgrind's slowdown (tens of times the step's time). The
#: first is not judged (`RouteCounts.judged_steps`), so two are.
COUNTED_STEPS = 3

#: Seconds a counting run may take before it is killed.
COUNTING_TIMEOUT_SECONDS = 900.0

#: The environment a counting worker computes in (see the module).
COUNTING_ENVIRONMENT = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
}

#: The OpenBLAS kernel a counting worker computes with on x86-64, unless the grade's
#: environment names one: Valgrind emulates fused multiply-adds slowly, and OpenBLAS's
#: Haswell and later kernels are made of them (mnist's step ran 1.9 s under Valgrind with
#: the Haswell kernel, 0.15 s with this one). The kernel is recorded with the counts, and
#: counts of different kernels are never compared.
COUNTING_BLAS_CORE = "Sandybridge"


def counting_environment(base: Mapping[str, str]) -> dict[str, str]:
    """The environment a counting worker runs in: `base` (the timed worker's) with
    `COUNTING_ENVIRONMENT` and the kernel above, and Python compiling every module from
    its source, reading and writing no bytecode (`PYTHONPYCACHEPREFIX` names no folder).

    Compiling costs a counting worker some five seconds under Valgrind, uncounted; what
    it buys is the same counts to the instruction from run to run. With modules read from
    bytecode, two workers of the same code counted a tiny step up to 0.14% apart (a few
    thousand instructions, in CPython's type cache and NumPy's identity hash, which are
    keyed by addresses); compiled, three side by side counted alike to the instruction."""
    environment = {**base, **COUNTING_ENVIRONMENT}
    if platform.machine().lower() in ("x86_64", "amd64") and not base.get("OPENBLAS_CORETYPE"):
        environment["OPENBLAS_CORETYPE"] = COUNTING_BLAS_CORE
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    environment["PYTHONPYCACHEPREFIX"] = os.devnull
    return environment


#: What to install where Valgrind is missing, said in the one line that says so.
INSTALL_HINT = "install it to count (Debian and Ubuntu: apt-get install valgrind)"

_TRIGGER = re.compile(r"^desc: Trigger: Client Request: topos step (\d+)\s*$")
_SUMMARY = re.compile(r"^summary:\s+(\d+)")


#: Linux's personality flag that turns address-space randomisation off (`setarch -R`).
ADDR_NO_RANDOMIZE = 0x0040000


def _fixed_addresses() -> None:
    """In the counting worker before it executes: no address-space randomisation."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.personality(ADDR_NO_RANDOMIZE)
    except (OSError, AttributeError):  # not Linux: counts keep what randomisation adds
        pass


#: Names the Valgrind to count with, where it is not `valgrind` on the path.
VALGRIND_VARIABLE = "TOPOS_VALGRIND"


def valgrind_tool() -> tuple[str, str] | str:
    """Valgrind's path and version (`valgrind-3.19.0`), or the one line saying why not
    (`$TOPOS_VALGRIND` names another Valgrind than the path's)."""
    path = shutil.which(os.environ.get(VALGRIND_VARIABLE) or "valgrind")
    if path is None:
        return f"instructions not counted: Valgrind is not installed; {INSTALL_HINT}"
    try:
        version = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"instructions not counted: {path} --version failed ({error})"
    return path, version or "valgrind"


def step_counts(directory: Path) -> tuple[dict[int, int], int]:
    """Per measured step, its instructions summed over the dumps of every process in
    `directory`; and how many processes dumped steps."""
    totals: dict[int, int] = {}
    processes: set[str] = set()
    for dump in sorted(directory.glob("callgrind.*")):
        if dump.suffix == ".log":
            continue
        step = None
        with dump.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                trigger = _TRIGGER.match(line)
                if trigger:
                    step = int(trigger.group(1))
                    continue
                summary = _SUMMARY.match(line)
                if summary and step is not None:
                    totals[step] = totals.get(step, 0) + int(summary.group(1))
                    processes.add(dump.name.split(".")[1])
                    break
    return totals, len(processes)


class CountingRun:
    """One route's counting worker under callgrind: started, waited for (or killed),
    then read (`counts`). Its output goes to files, so any number run at once without a
    reader thread each: counts do not depend on the load, so they need not run alone."""

    def __init__(
        self,
        request: WorkerRequest,
        environment: Mapping[str, str],
        valgrind: tuple[str, str],
        library: Path,
        steps: int = COUNTED_STEPS,
    ) -> None:
        self.request = request
        self.steps = steps
        self._valgrind, self._version = valgrind
        self._library = library
        self._environment = dict(environment)
        self._scratch = tempfile.TemporaryDirectory(prefix="topos-counts-")
        self.folder = Path(self._scratch.name)
        self.process: subprocess.Popen[bytes] | None = None
        self._began = 0.0
        self.seconds: float | None = None

    def start(self) -> None:
        """Starts the counting worker (measured steps `steps`, after the request's warm-up)."""
        request = self.request
        # The timed request's worker in every respect (its checkout's path and working
        # directory included) but for its steps: never held, it waits for no turn.
        counted = dataclasses.replace(request, steps=self.steps, hold=False)
        command = [
            self._valgrind,
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={self.folder / 'callgrind.%p'}",
            f"--log-file={self.folder / 'valgrind.%p.log'}",
            "--dump-line=no",
            *counted.command(),
        ]
        environment = counting_environment(request_environment(request, self._environment))
        environment[CLIENT_REQUESTS_VARIABLE] = str(self._library)
        self._began = time.monotonic()
        with (
            (self.folder / "events").open("wb") as events,
            (self.folder / "errors").open("wb") as errors,
        ):
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=events,
                stderr=errors,
                env=environment,
                cwd=request.working_directory,
                start_new_session=True,
                preexec_fn=_fixed_addresses if sys.platform.startswith("linux") else None,
            )

    def wait(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds; whether the worker ended."""
        assert self.process is not None
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        self.seconds = time.monotonic() - self._began
        return True

    def kill(self) -> None:
        """Ends the worker and every process of its session (its shard processes)."""
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def counts(self, timed_out: bool = False) -> RouteCounts:
        """What the worker counted, or how it failed; its files are removed after."""
        try:
            return self._read(timed_out)
        finally:
            self._scratch.cleanup()

    def _read(self, timed_out: bool) -> RouteCounts:
        label, name = self.request.label, f"{self._version} callgrind"
        output = (self.folder / "events").read_bytes()
        events = [protocol.decode(line) for line in output.splitlines()]
        numerics = next(
            (event.facts.numerics for event in events if isinstance(event, protocol.Ready)),
            None,
        )
        bits = [event.bits for event in events if isinstance(event, protocol.Step)]
        failure = next((event for event in events if isinstance(event, protocol.Error)), None)
        totals, processes = step_counts(self.folder)
        returncode = None if self.process is None else self.process.returncode
        if timed_out or failure is not None or returncode != 0 or len(totals) < self.steps:
            if timed_out:
                detail = f"timed out after {self.seconds or 0:.0f} s"
            elif failure is not None:
                detail = f"{failure.type}: {failure.message}"
            else:
                errors = (self.folder / "errors").read_bytes().decode(errors="replace")
                last = [line for line in errors.splitlines() if line.strip()]
                detail = f"exit status {returncode}, {len(totals)} of {self.steps} steps counted"
                detail += f": {last[-1]}" if last else ""
            return RouteCounts(
                route=label,
                status="failed",
                tool=name,
                numerics=numerics,
                seconds=self.seconds,
                detail=detail,
            )
        return RouteCounts(
            route=label,
            status="counted",
            per_step=[totals[step] for step in sorted(totals)],
            warmup_steps=self.request.warmup,
            processes=processes,
            loss_bits=bits,
            tool=name,
            numerics=numerics,
            seconds=self.seconds,
        )


def count_routes(
    requests: Sequence[WorkerRequest],
    environment: Mapping[str, str],
    steps: int = COUNTED_STEPS,
    at_once: int = 2,
    timeout: float = COUNTING_TIMEOUT_SECONDS,
) -> list[RouteCounts]:
    """The counts of each request's route (each label once, in order), `at_once` counting
    workers at a time. An interrupt kills every counting worker and propagates."""
    unique = list({request.label: request for request in reversed(requests)}.values())[::-1]
    tool = valgrind_tool()
    if isinstance(tool, str):
        return [RouteCounts(route=r.label, status="not counted", detail=tool) for r in unique]
    try:
        library = client_requests_library()
    except ClientRequestsError as missing:
        detail = f"instructions not counted: {missing}"
        return [RouteCounts(route=r.label, status="not counted", detail=detail) for r in unique]
    runs = [CountingRun(request, environment, tool, library, steps) for request in unique]
    results: dict[str, RouteCounts] = {}
    waiting = list(runs)
    running: list[tuple[CountingRun, float]] = []
    try:
        while waiting or running:
            while waiting and len(running) < max(1, at_once):
                run = waiting.pop(0)
                run.start()
                running.append((run, time.monotonic() + timeout))
            for run, deadline in list(running):
                if run.wait(0.05):
                    results[run.request.label] = run.counts()
                    running.remove((run, deadline))
                elif time.monotonic() > deadline:
                    run.kill()
                    results[run.request.label] = run.counts(timed_out=True)
                    running.remove((run, deadline))
    except BaseException:
        for run in runs:
            run.kill()
            run.counts()  # removes its files
        raise
    return [results[request.label] for request in unique]
