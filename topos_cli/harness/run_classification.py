"""How a worker's run ended: its status and the detail a failure shows first, and the
peak of its measured steps with where that figure came from."""

from __future__ import annotations

import signal

from topos_cli.harness.worker_process import signal_name
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.harness.worker_stderr import without_traceback_frames
from topos_cli.worker import protocol


def error_lines(error: protocol.Error | None) -> list[str]:
    """The worker's `error` event as a first line and where it was raised."""
    if error is None:
        return []
    kind, message = error.type, error.message
    lines = [f"{kind}: {message}" if message and message != kind else kind]
    if error.where:
        lines.append(f"at {error.where}")
    return lines


def classify_run(
    request: WorkerRequest,
    *,
    steps_done: int,
    returncode: int | None,
    timed_out: bool,
    interruption: str | None,
    nonfinite: protocol.Nonfinite | None,
    done: protocol.Done | None,
    error: protocol.Error | None,
    stderr_tail: list[str],
    stray_output: list[str],
) -> tuple[str, str | None]:
    """A run's status (`ok`, `interrupted`, `timed out`, `nonfinite`, `failed`) and, unless
    it is ok, a detail whose first line is the cause, from how its worker ended and what
    it said."""
    reached = f"{steps_done} of {request.steps} steps"
    if interruption is not None:
        return "interrupted", f"interrupted by {interruption} after {reached}"
    if timed_out:
        lines = [
            f"timed out after {request.timeout:g} s, {reached} done; its process group was killed"
        ]
        return "timed out", "\n".join(lines + without_traceback_frames(stderr_tail))
    if nonfinite is not None:
        return "nonfinite", f"loss became {nonfinite.loss}; training stopped there"
    complete = (
        returncode == 0 and done is not None and done.status == "ok" and steps_done == request.steps
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
    said = error_lines(error)
    first = f"{cause}: {said[0]}" if said else f"{cause} after {reached}"
    lines = [first, *said[1:]]
    tail = without_traceback_frames(stderr_tail)
    if stray_output:
        tail = [*stray_output, *tail]
    if tail:
        lines += ["stderr:", *tail]
    return "failed", "\n".join(lines)


def measured_peak(
    done: protocol.Done | None, ready: protocol.Ready | None, sampled: int | None
) -> tuple[int | None, str | None]:
    """The peak RSS of the measured steps and where it came from: the worker's own VmHWM
    where it reads one, else the larger of what it read and what the parent sampled."""
    if done is None:
        return None, None
    reported = done.peak_rss_bytes
    if reported is not None and ready is not None and ready.facts.reads_high_water:
        return reported, "VmHWM"
    # No /proc in the worker (macOS): the larger of what it read at its steps' peaks
    # (psutil, ru_maxrss when it rose) and what was sampled here; coarser, said so.
    readings = [value for value in (reported, sampled) if value]
    return (max(readings) if readings else None), "sampling"
