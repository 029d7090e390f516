"""`topos check`: are the gradients right at all? (parity cannot tell)

`run_check(options)` is `topos check` without the command line: it records the
workload's model in float64, takes the first `rows` rows of its first batch (16 by
default, so the built-in workloads check in seconds), compares each route's gradient
with finite differences (`topos.checking.check_gradients`), names the first wrong
derivative rule when there is one, and runs the float32 routes on the same rows bit
for bit. A rich table per parameter, a one-line verdict, and JSON for CI.

Exit statuses: 0 every gradient within tolerance (and float32 parity intact);
2 bad input (one line); 3 a gradient is wrong (the rule is named) or the float32
routes part.

`check_before_grade` runs the same check in a child process (`topos grade --check`):
this module imports neither NumPy nor the library until `run_check` runs, so the
grading parent stays light.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from topos.names import ROUTES, UnknownNameError, check_workload_name
from topos_cli import count_own_frames_as_machinery
from topos_cli.shared.bounds import (
    MOST_CHECK_ROWS,
    MOST_DIRECTIONS,
    MOST_SEED,
    check_count,
)
from topos_cli.shared.errors import ExitStatus, ToposUsageError

#: The JSON schema `topos check --json` writes.
SCHEMA = "topos.check/1"
#: Rows of the first batch a check differentiates (at most a shard's).
CHECK_ROWS = 16
#: Random directions per parameter.
DIRECTIONS = 3


@dataclass(frozen=True)
class CheckOptions:
    """What `topos check` was asked to do; `run_check` validates it."""

    workload: str = "cifar10"
    routes: tuple[str, ...] = ROUTES
    directions: int = DIRECTIONS
    seed: int = 0
    #: A directory of real data files, or `None` (or `"synthetic"`) for the stand-in.
    data: str | None = None
    #: Where the JSON goes: a path, `-` for standard output, `None` for nowhere.
    json_path: str | None = None
    rows: int = CHECK_ROWS


def _validate(options: CheckOptions) -> str | None:
    """Refuses bad options in one line (exit 2); returns the data directory or None."""
    try:
        check_workload_name(options.workload)
    except UnknownNameError as error:
        raise ToposUsageError(str(error)) from None
    if not options.routes:
        raise ToposUsageError(f"--route names no route; routes are {', '.join(ROUTES)}")
    check_count("--directions", options.directions, most=MOST_DIRECTIONS)
    check_count("--rows", options.rows, most=MOST_CHECK_ROWS)
    check_count("--seed", options.seed, least=0, most=MOST_SEED)
    data = options.data
    if data is None or data.strip() in ("", "synthetic"):
        return None
    path = Path(data)
    if not path.is_dir():
        raise ToposUsageError(f"{data}: no such directory (--data names a folder, or 'synthetic')")
    return str(path.resolve())


def run_check(
    options: CheckOptions, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Validates, checks, prints and writes; returns the exit status (0 or 3).

    Raises `ToposUsageError` (exit 2) for bad options, an unknown workload, unreadable
    data, or a workload that cannot record in float64.
    """
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    directory = _validate(options)
    if options.json_path not in (None, "-"):
        from topos_cli.harness.result_destination import check_destination

        check_destination(options.json_path)

    import numpy as np

    from topos.checking import check_gradients, check_parity
    from topos.datasets.errors import DataError
    from topos.errors import GraphError, ShapeError
    from topos.tensor import Tensor
    from topos.training import TooFewSamplesError
    from topos.training.recording_dtype import DtypeNotSupportedError, record_in_dtype
    from topos.workloads import WorkloadNotFoundError, resolve

    count_own_frames_as_machinery()

    started = datetime.now(timezone.utc)
    try:
        workload = resolve(options.workload)
        dataset = workload.load_dataset(directory)
        workload = workload.fitted(dataset)
        train = dataset.train
        # The first rows of the first batch the grade trains on (the workload's order).
        order = workload.batches(train, workload.batch_size, workload.shuffle_state)
    except (WorkloadNotFoundError, DataError, TooFewSamplesError) as error:
        raise ToposUsageError(str(error)) from None
    except ValueError as error:  # a workload's own refusal (e.g. of --data)
        from topos.workloads.user_code_error import user_code_error

        mistake = user_code_error(error) or f"workload {options.workload!r}: {error}"
        raise ToposUsageError(mistake) from None
    unknown = [route for route in options.routes if route not in workload.routes]
    if unknown:
        raise ToposUsageError(
            f"workload {workload.name!r} has no route {unknown[0]!r}; "
            f"it has {', '.join(workload.routes)}"
        )
    rows = min(options.rows, workload.batch_size // workload.shards)
    indices = order.indices(0)[:rows]

    def batch(recording, dtype) -> dict:
        # The workload's feeds, its float payloads in `dtype` (index inputs stay as they are).
        feeds = workload.feeds(train, indices, recording)
        return {
            symbol: feed.numpy().astype(dtype) if isinstance(feed, Tensor) else feed
            for symbol, feed in feeds.items()
        }

    def recorded(dtype):
        try:
            return record_in_dtype(workload, rows, dtype)
        except DtypeNotSupportedError as error:
            raise ToposUsageError(str(error)) from None
        except (ShapeError, GraphError) as error:
            raise ToposUsageError(
                f"workload {options.workload!r} failed to record: {error}"
            ) from None

    tape, recording = recorded(np.float64)
    feeds = batch(recording, np.float64)
    gradient_check = check_gradients(
        tape,
        recording.loss,
        recording.parameters,
        feeds,
        routes=options.routes,
        directions=options.directions,
        seed=options.seed,
    )
    if len(options.routes) > 1:
        tape, recording = recorded(np.float32)
        feeds = batch(recording, np.float32)
        gradient_check.parity = check_parity(tape, recording.loss, recording.parameters, feeds)
    status = ExitStatus.OK if gradient_check.passed else ExitStatus.PARITY_BROKEN
    data = {
        "name": dataset.name,
        "source": dataset.source,
        "format": dataset.format,
        "fingerprint": getattr(dataset, "fingerprint", None),
    }
    result = {
        "schema": SCHEMA,
        "created": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "exit_status": int(status),
        "workload": {"name": options.workload, "data": data},
        "batch": {"rows": rows, "of": workload.batch_size, "indices": indices.tolist()},
        "settings": {
            "routes": list(options.routes),
            "directions": options.directions,
            "seed": options.seed,
            "dtype": "float64",
        },
        **gradient_check.to_json(),
    }
    table = stderr if options.json_path == "-" else stdout
    _print_check(gradient_check, result, table)
    if options.json_path is not None:
        from topos_cli.result.result_file import write_atomically

        write_atomically(options.json_path, result)
        if options.json_path != "-":
            stderr.write(f"results: {options.json_path}\n")
    return int(status)


def _short(source: str) -> str:
    """`file:line` relative to the working directory when it lies below it."""
    if not source:
        return ""
    try:
        return str(Path(source).relative_to(Path.cwd()))
    except ValueError:
        return source


def _print_check(gradient_check: Any, result: dict[str, Any], stream: TextIO) -> None:
    """The table per parameter, the failing rules, notes and the verdict line."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(
        file=stream,
        highlight=False,
        width=None if stream.isatty() else 160,
        no_color=not stream.isatty(),
    )
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("parameter")
    table.add_column("shape")
    for route in gradient_check.routes:
        table.add_column(f"{route} rel. error", justify="right")
    table.add_column("directions", justify="right")
    table.add_column("check")
    table.add_column("recorded at")
    for check in gradient_check.parameters:
        errors = [
            "-" if check.errors.get(route) is None else f"{check.errors[route]:.1e}"
            for route in gradient_check.routes
        ]
        used = f"{check.directions}" + (
            f" ({check.one_sided} one-sided)" if check.one_sided else ""
        )
        if check.skipped:
            used += f", {len(check.skipped)} skipped"
        style = {"pass": "green", "FAIL": "bold red", "inconclusive": "yellow"}[check.status]
        verdict = Text(check.status, style=style)
        table.add_row(
            check.label,
            "[" + ", ".join(map(str, check.shape)) + "]",
            *errors,
            used,
            verdict,
            _short(check.source),
        )
    console.print(table)
    for route, error in gradient_check.route_errors.items():
        console.print(Text(f"route {route} failed: {error}", style="red"))
    for failure in gradient_check.rules:
        line = f"wrong rule: {failure.describe()}"
        if failure.applies:
            line += f" [the rule applies: {', '.join(dict.fromkeys(failure.applies))}]"
        console.print(Text(line, style="red"))
    for check in gradient_check.parameters:
        for reason in check.skipped:
            console.print(Text(f"skipped: {check.label} {reason}", style="yellow"))
        for reason in check.inconclusive:
            console.print(Text(f"inconclusive: {check.label} {reason}", style="yellow"))
    for note in gradient_check.rule_notes:
        console.print(Text(f"note: {note}", style="yellow"))
    console.print(Text(gradient_check.verdict(), style=_verdict_style(gradient_check)))
    data = result["workload"]["data"]
    batch = result["batch"]
    source = "synthetic stand-in" if data["source"] == "synthetic" else data["source"]
    console.print(
        f"data: {data['name']}, {source}; the first {batch['rows']} rows of the first batch "
        f"of {batch['of']}; float64, tolerance {gradient_check.tolerance:g}, "
        f"{result['settings']['directions']} directions per parameter, seed "
        f"{result['settings']['seed']}; {gradient_check.seconds:.1f}s"
    )


def check_before_grade(workload: str, data: str | None, *, stdout: TextIO, stderr: TextIO) -> int:
    """`topos grade --check`: runs `topos check` in a child process (the grading parent
    never imports NumPy), shows what it printed, and returns its exit status; raises
    `ToposUsageError` with the child's one line when it refused its input."""
    command = [sys.executable, "-m", "topos_cli.app", "check", "--workload", workload]
    if data is not None:
        command += ["--data", data]
    from topos_cli.shared.parent_death import dies_with_parent

    # Killed by the kernel should the grade die first: no child outlives the grade.
    completed = subprocess.run(
        command, capture_output=True, text=True, check=False, preexec_fn=dies_with_parent()
    )
    stdout.write(completed.stdout)
    stdout.flush()
    if completed.returncode == ExitStatus.USAGE:
        lines = [line for line in completed.stderr.splitlines() if line.startswith("topos: error:")]
        message = lines[-1].removeprefix("topos: error: ") if lines else completed.stderr.strip()
        raise ToposUsageError(f"--check: {message}")
    stderr.write(completed.stderr)
    if completed.returncode != ExitStatus.OK:
        stderr.write(
            "topos: the check found wrong gradients; the routes were not graded "
            "(parity would have called them bit-identical)\n"
        )
    stderr.flush()
    return completed.returncode


def _verdict_style(gradient_check) -> str:
    """Green for right, yellow where finite differences could not decide, red for wrong."""
    if not gradient_check.passed:
        return "bold red"
    return "bold yellow" if gradient_check.undecided else "bold green"
