"""A result's circumstances in words: host, commit, data and settings, one line each.

The report, the history and the terminal say them alike. Every fact is
optional: an older result, or one cut short, simply has fewer words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from topos_cli.shared.units import format_bytes, format_duration

GIBIBYTE = 1024**3


def _object(value: Any) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def describe_commit(result: Mapping[str, Any]) -> str:
    """E.g. `a8856fe24f89` or `a8856fe24f89 (uncommitted changes)`; `unknown commit` if none."""
    git = _object(_object(result.get("host")).get("git"))
    commit = git.get("commit")
    if not isinstance(commit, str) or not commit:
        return "unknown commit"
    return commit[:12] + (" (uncommitted changes)" if git.get("dirty") else "")


def describe_host(result: Mapping[str, Any]) -> str:
    """E.g. `host: Intel Xeon, 2 cores (2 available), 23.5 GiB, Linux 6.1, Python 3.11.7,
    NumPy 2.4.6, scipy-openblas 0.3.31, load 2.52`."""
    host = _object(result.get("host"))
    parts = []
    if host.get("cpu_model"):
        parts.append(str(host["cpu_model"]))
    if host.get("logical_cores"):
        cores = f"{host['logical_cores']} cores"
        if host.get("available_cores") not in (None, host["logical_cores"]):
            cores += f" ({host['available_cores']} available)"
        parts.append(cores)
    if isinstance(host.get("memory_bytes"), int):
        parts.append(f"{host['memory_bytes'] / GIBIBYTE:.1f} GiB")
    for key in ("system", "python"):
        if host.get(key):
            parts.append(f"Python {host[key]}" if key == "python" else str(host[key]))
    numerics = _object(host.get("numerics"))
    if numerics.get("numpy"):
        parts.append(f"NumPy {numerics['numpy']}")
    blas = _object(numerics.get("blas"))
    if blas.get("name"):
        parts.append(f"{blas['name']} {blas.get('version') or ''}".strip())
    load = host.get("load_average")
    if isinstance(load, list) and load and isinstance(load[0], int | float):
        parts.append(f"load {load[0]:.2f}")
    return "host: " + (", ".join(parts) if parts else "not recorded")


def describe_settings(result: Mapping[str, Any]) -> str:
    """E.g. `settings: 300 steps, routes engine, recorded, 1 repeat, threads default, ...`."""
    settings = _object(result.get("settings"))
    parts = []
    if isinstance(result.get("steps"), int):
        parts.append(f"{result['steps']} steps")
    routes = settings.get("routes")
    if isinstance(routes, list) and routes:
        parts.append("routes " + ", ".join(str(route) for route in routes))
    if isinstance(settings.get("repeat"), int):
        parts.append(f"{settings['repeat']} repeat{'s' if settings['repeat'] != 1 else ''}")
    if "threads" in settings:
        threads = settings.get("threads")
        parts.append(f"threads {threads if threads is not None else 'default'}")
    timeout = settings.get("timeout_seconds")
    if isinstance(timeout, int | float):
        parts.append(f"timeout {format_duration(timeout)}")
    environment = _object(settings.get("environment"))
    parts.extend(f"{name}={value}" for name, value in environment.items() if value is not None)
    interval = settings.get("sample_interval_seconds")
    if isinstance(interval, int | float):
        parts.append(f"RSS sampled every {interval * 1000:g} ms")
    return "settings: " + (", ".join(parts) if parts else "not recorded")


def describe_outcome(result: Mapping[str, Any]) -> str:
    """E.g. `grade: cifar10, complete, exit status 0, 2026-11-30T13:07:49Z, commit a8856fe24f89`."""
    workload = _object(result.get("workload")).get("name", "unknown workload")
    parts = [str(workload)]
    if result.get("status"):
        parts.append(str(result["status"]))
    if isinstance(result.get("exit_status"), int):
        parts.append(f"exit status {result['exit_status']}")
    if result.get("created"):
        parts.append(str(result["created"]))
    parts.append(f"commit {describe_commit(result)}")
    return "grade: " + ", ".join(parts)


def describe_predictions(predictions: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per route: the predicted training delta against the measured one, and
    what the prediction leaves unexplained (negative: it predicted more)."""
    lines = []
    for prediction in predictions:
        line = (
            f"memory: {prediction['route']} predicted training Δ "
            f"{format_bytes(prediction.get('predicted_training_bytes'))}, measured "
            f"{format_bytes(prediction['measured_training_delta_bytes'])}"
        )
        if prediction["ratio"] is not None:
            unexplained = prediction.get("unexplained_bytes")
            line += f" ({prediction['ratio']:.2f}x"
            if unexplained is not None and unexplained >= 0:
                line += f", {format_bytes(unexplained)} unexplained"
            elif unexplained is not None:
                line += f", {format_bytes(-unexplained)} over"
            line += ")"
        lines.append(line)
    return lines


def describe_remat(route_facts: Mapping[str, Any]) -> list[str]:
    """One line per remat route: its budget, planned bytes, floor and recomputations."""
    lines = []
    for route, facts in route_facts.items():
        remat = (facts or {}).get("remat")
        if not remat:
            continue
        lines.append(
            f"{route}: budget {format_bytes(remat['budget_bytes'])} "
            f"({100 * remat['budget_fraction']:.0f}% of recorded's planned "
            f"{format_bytes(remat['unconstrained_bytes'])}), planned "
            f"{format_bytes(remat['planned_bytes'])}, floor {format_bytes(remat['floor_bytes'])}; "
            f"{remat['recomputations']} recomputed (+{100 * remat['extra_flops_fraction']:.1f}% "
            f"FLOPs)"
        )
    return lines


def describe_data(data: Mapping[str, Any]) -> str:
    """E.g. `data: cifar10, synthetic (fingerprint 8bc00cf64ce4)`."""
    if "name" not in data:
        return f"data: {data.get('requested')} (not loaded)"
    fingerprint = str(data.get("fingerprint") or "")[:12]
    source = data.get("source")
    if source == "synthetic":
        source_text = "synthetic stand-in"
    else:
        source_text = f"{data.get('format')} files in {source}"
    return f"data: {data['name']}, {source_text} (fingerprint {fingerprint})"
