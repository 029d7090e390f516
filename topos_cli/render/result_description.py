"""A result's circumstances in words: host, commit, data and settings, one line each.

The report, the history and the terminal say them alike. Every fact is
optional: an older result, or one cut short, simply has fewer words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from topos_cli.result.data_facts import DataFacts
from topos_cli.result.grade_result import GradeResult, MemoryPrediction, RouteFacts
from topos_cli.result.result_commit import describe_commit
from topos_cli.result.worker_facts import Numerics
from topos_cli.shared.units import format_bytes, format_duration

GIBIBYTE = 1024**3


def describe_tool(result: GradeResult) -> str:
    """E.g. `topos 0.1.0 (commit 821fdaefe93d)`: the grader's own version, beside the
    project's commit, when topos ran from a checkout of its own."""
    git = result.host.git
    text = f"{result.tool.name} {result.tool.version}"
    if git is not None and git.commit:
        text += f" (commit {git.commit[:12]}{', uncommitted changes' if git.dirty else ''})"
    return text


def describe_host(result: GradeResult) -> str:
    """E.g. `host: Intel Xeon, 2 cores (2 available), 23.5 GiB, Linux 6.1, Python 3.11.7,
    NumPy 2.4.6, scipy-openblas 0.3.31, load 2.52`."""
    host = result.host
    parts = []
    if host.cpu_model:
        parts.append(host.cpu_model)
    if host.cpu_flags:
        parts.append(" ".join(host.cpu_flags))
    if host.logical_cores:
        cores = f"{host.logical_cores} cores"
        if host.available_cores not in (None, host.logical_cores):
            cores += f" ({host.available_cores} available)"
        parts.append(cores)
    if host.memory_bytes is not None:
        parts.append(f"{host.memory_bytes / GIBIBYTE:.1f} GiB")
    if host.operating_system:
        parts.append(host.operating_system)
    if host.system:
        parts.append(f"{host.system} {host.machine or ''}".strip())
    if host.python:
        parts.append(f"Python {host.python}")
    numerics = host.numerics or Numerics()
    if numerics.numpy:
        parts.append(f"NumPy {numerics.numpy}")
    blas = numerics.blas or {}
    if blas.get("name"):
        parts.append(f"{blas['name']} {blas.get('version') or ''}".strip())
    if numerics.blas_kernel:
        parts.append(f"running {numerics.blas_kernel}")
    if host.load_average:
        parts.append(f"load {host.load_average[0]:.2f}")
    return "host: " + (", ".join(parts) if parts else "not recorded")


def describe_settings(result: GradeResult) -> str:
    """E.g. `settings: 300 steps, routes engine, recorded, 1 repeat, threads default, ...`."""
    settings = result.settings
    parts = [f"{result.steps} steps"]
    if settings.routes:
        parts.append("routes " + ", ".join(settings.routes))
    if settings.repeat is not None:
        parts.append(f"{settings.repeat} repeat{'s' if settings.repeat != 1 else ''}")
    threads = settings.threads
    parts.append(f"threads {threads if threads is not None else 'default'}")
    if settings.timeout_seconds is not None:
        parts.append(f"timeout {format_duration(settings.timeout_seconds)}")
    parts.extend(
        f"{name}={value}" for name, value in settings.environment.items() if value is not None
    )
    interval = settings.sample_interval_seconds
    if interval is not None:
        parts.append(f"RSS sampled every {interval * 1000:g} ms")
    return "settings: " + ", ".join(parts)


def describe_outcome(result: GradeResult) -> str:
    """E.g. `grade: cifar10, complete, exit status 0, 2026-11-30T13:07:49Z, commit a8856fe24f89`."""
    parts = [result.workload.name]
    if result.status:
        parts.append(result.status)
    if result.exit_status is not None:
        parts.append(f"exit status {result.exit_status}")
    if result.created:
        parts.append(result.created)
    if result.project is not None and result.project.name:
        parts.append(f"project {result.project.name} at commit {describe_commit(result)}")
        parts.append(describe_tool(result))
    else:
        parts.append(f"commit {describe_commit(result)}")
    return "grade: " + ", ".join(parts)


def describe_predictions(predictions: Sequence[MemoryPrediction]) -> list[str]:
    """One line per route: the predicted training delta against the measured one, and
    what the prediction leaves unexplained (negative: it predicted more)."""
    lines = []
    for prediction in predictions:
        line = (
            f"memory: {prediction.route} predicted training Δ "
            f"{format_bytes(prediction.predicted_training_bytes)}, measured "
            f"{format_bytes(prediction.measured_training_delta_bytes)}"
        )
        if prediction.ratio is not None:
            unexplained = prediction.unexplained_bytes
            line += f" ({prediction.ratio:.2f}x"
            if unexplained is not None and unexplained >= 0:
                line += f", {format_bytes(unexplained)} unexplained"
            elif unexplained is not None:
                line += f", {format_bytes(-unexplained)} over"
            line += ")"
        lines.append(line)
    return lines


def describe_remat(route_facts: Mapping[str, RouteFacts]) -> list[str]:
    """One line per remat route: its budget, planned bytes, floor and recomputations."""
    lines = []
    for route, facts in route_facts.items():
        remat = facts.remat
        if remat is None:
            continue
        floor = "not sought" if remat.floor_bytes is None else format_bytes(remat.floor_bytes)
        lines.append(
            f"{route}: budget {format_bytes(remat.budget_bytes)} "
            f"({100 * remat.budget_fraction:.0f}% of recorded's planned "
            f"{format_bytes(remat.unconstrained_bytes)}), planned "
            f"{format_bytes(remat.planned_bytes)}, floor {floor}; "
            f"{remat.recomputations} recomputed (+{100 * remat.extra_flops_fraction:.1f}% "
            f"FLOPs)"
        )
    return lines


def describe_data(data: DataFacts | None) -> str:
    """E.g. `data: cifar10, synthetic (fingerprint 8bc00cf64ce4)`."""
    data = data or DataFacts()
    if data.name is None:
        return f"data: {data.requested} (not loaded)"
    fingerprint = (data.fingerprint or "")[:12]
    if data.source == "synthetic":
        source_text = "synthetic stand-in"
    else:
        source_text = f"{data.format} files in {data.source}"
    return f"data: {data.name}, {source_text} (fingerprint {fingerprint})"
