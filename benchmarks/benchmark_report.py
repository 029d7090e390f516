"""The one JSON every benchmark writes: its figures inside a versioned envelope.

    {"format": "topos-benchmark", "version": 1, "benchmark": "step_time",
     "kind": "headline", "started": "2026-12-03T12:00:00+00:00",
     "machine": {"cpu": ..., "cores": 2, "load": [1.2, 1.1, 0.9], "python": "3.11.7",
                 "numpy": "2.1.0", "blas": [...], "architecture": "x86_64"},
     "figures": {...}}

`figures` is the benchmark's own (each documents its keys); the rest is the same for
every benchmark, so a reader can tell a benchmark's file from any other JSON, which
benchmark and kind of the catalogue wrote it, when, and on what machine, before it
reads a figure. `version` grows when the envelope's own keys change meaning.

    python -m benchmarks.benchmark_report results/step_time.json   # checks, summarises
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.catalogue import entry

FORMAT = "topos-benchmark"
VERSION = 1


class ReportError(ValueError):
    """A file that is not a benchmark report of a version this code reads."""


def now() -> str:
    """The time now, in UTC, as the envelope writes it (ISO 8601, to the second)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _cpu() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo, else the platform's word for it)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _blas() -> list[dict[str, Any]]:
    """The BLAS libraries NumPy loaded: which, its version, the kernels it chose, threads."""
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl then finds)
    from threadpoolctl import threadpool_info

    return [
        {
            "library": pool.get("internal_api"),
            "version": pool.get("version"),
            "kernels": pool.get("architecture"),
            "threads": pool.get("num_threads"),
        }
        for pool in threadpool_info()
        if pool.get("user_api") == "blas"
    ]


def machine() -> dict[str, Any]:
    """What the figures depend on of the machine: its CPU, cores and load (1, 5 and 15
    minutes: these machines are shared), Python's and NumPy's versions and NumPy's BLAS."""
    import numpy as np

    return {
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "load": list(os.getloadavg()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas(),
        "architecture": platform.machine(),
    }


def envelope(benchmark: str, figures: Mapping[str, Any], started: str | None = None) -> dict:
    """`figures` of `benchmark` (a catalogued module's name) in the envelope; `started`
    is when the benchmark started (`now()` then), the time now when not given."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "benchmark": benchmark,
        "kind": entry(benchmark).kind,
        "started": started or now(),
        "machine": machine(),
        "figures": dict(figures),
    }


def write_report(
    benchmark: str, figures: Mapping[str, Any], out: Path, started: str | None = None
) -> dict:
    """Writes `figures` of `benchmark` in the envelope to `out`, says so, and returns the
    report written."""
    report = envelope(benchmark, figures, started)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return report


def read_report(path: Path) -> dict:
    """The report in `path`; a ReportError naming the file when it is not one this code
    reads (not JSON, not the envelope, or another version)."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise ReportError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(report, dict) or report.get("format") != FORMAT:
        raise ReportError(f'{path}: not a benchmark report (no "format": "{FORMAT}")')
    if report.get("version") != VERSION:
        raise ReportError(
            f"{path}: a benchmark report of version {report.get('version')!r}; "
            f"this code reads version {VERSION}"
        )
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Checks each report given and prints its benchmark, kind, start and machine."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="*", type=Path, help="report files to check")
    arguments = parser.parse_args(argv)
    for path in arguments.reports:
        try:
            report = read_report(path)
        except ReportError as error:
            print(f"benchmark_report: {error}", file=sys.stderr)
            return 1
        found = report["machine"]
        print(
            f"{path}: {report['benchmark']} ({report['kind']}), started {report['started']}, "
            f"{found['cpu']}, {found['cores']} cores, load {found['load'][0]:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
