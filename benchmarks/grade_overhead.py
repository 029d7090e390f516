"""What a grade costs beyond the training it measures: `topos grade`'s wall time minus
the routes' training time, phase by phase.

    python -m benchmarks.grade_overhead [--rounds 3] [--no-bytecode] [-- GRADE ARGUMENTS...]

An untimed round comes first (the synthetic data cached, the files in the page
cache, the bytecode compiled). Python's bytecode is cached as an installed package's
is, in a folder of the benchmark's own (`PYTHONPYCACHEPREFIX`), even where the
environment says `PYTHONDONTWRITEBYTECODE`; `--no-bytecode` measures without it
(every process then compiles topos's modules from source, some 0.1 s each). Each
round runs `topos grade --steps 300` (or the arguments given after `--`) as a
user runs it, timed from the outside, and reads its result: each run's training
time (first measured step to last, as the worker timed it), its start-up (spawn to
`ready`: interpreter, imports, data, lowering, warm-up; less the time it waited for
its turn, and less the time it loaded beside the other worker of its pair, so the
start-ups add up to their time on the clock) and its end (`done` to exit).
What is left is the grading parent's own: its start-up, the verdict, the result
file and the report, which is then drawn once more on its own to time it. The
overhead is the wall time minus the training; the table gives the median of the
rounds and each round's figures, with the load average, since a busy machine slows
every phase.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.grade_command import run_grade

ROOT = Path(__file__).resolve().parent.parent


def grade_once(arguments: list[str], folder: Path, environment: dict[str, str]) -> dict[str, float]:
    """One timed grade and the phases of its wall time, in seconds."""
    result = folder / "grade.json"
    load = os.getloadavg()[0]
    wall, found = run_grade(arguments, result, environment=environment, cwd=folder, check=True)
    runs = [repeat["facts"] for repeat in found["repeats"]]
    training = sum(run["training_seconds"] for run in runs)
    # Two workers load at once: on the clock, their start-ups take their own times less
    # the time both loaded together (what each waited for its turn is in neither).
    start_up = sum(
        run["ready_after_seconds"] - run.get("start_up_overlapped_seconds", 0.0) for run in runs
    )
    ends = sum(
        run["wall_seconds"] - run["ready_after_seconds"] - run["training_seconds"] for run in runs
    )
    report_started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "topos_cli.render.report_html",
            str(result),
            "--html",
            str(folder / "again.html"),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**environment, "MPLBACKEND": "Agg"},
    )
    report = time.perf_counter() - report_started
    return {
        "load": load,
        "wall": wall,
        "training": training,
        "overhead": wall - training,
        "worker start-up": start_up,
        "worker end": ends,
        "parent": wall - training - start_up - ends,
        "report alone": report,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-bytecode", action="store_true", help="compile from source")
    parser.add_argument("grade", nargs="*", help="arguments for topos grade (after --)")
    options = parser.parse_args()
    arguments = options.grade or ["--steps", "300"]
    rounds = []
    with tempfile.TemporaryDirectory() as folder:
        environment = dict(os.environ)
        if options.no_bytecode:
            environment["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            environment.pop("PYTHONDONTWRITEBYTECODE", None)
            environment["PYTHONPYCACHEPREFIX"] = str(Path(folder) / "bytecode")
        grade_once(arguments, Path(folder), environment)  # untimed: caches warm
        for _ in range(options.rounds):
            rounds.append(grade_once(arguments, Path(folder), environment))
    names = list(rounds[0])
    print(f"topos grade {' '.join(arguments)}: {options.rounds} rounds (seconds)")
    print(
        f"{'phase':<16} {'median':>8}  "
        + "  ".join(f"{'round ' + str(i + 1):>8}" for i in range(len(rounds)))
    )
    for name in names:
        values = [figures[name] for figures in rounds]
        cells = "  ".join(f"{value:8.2f}" for value in values)
        print(f"{name:<16} {statistics.median(values):8.2f}  {cells}")


if __name__ == "__main__":
    main()
