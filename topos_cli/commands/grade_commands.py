"""`topos grade` and `topos frontier`: the command lines of grading (the grade itself:
grade.py; a frontier is a grade of remat at several budgets, finished by frontier.py).

Like every command, they load neither NumPy nor the library: the grading parent stays light.
"""

from __future__ import annotations

from typing import Annotated

import typer

from topos_cli.commands.options import (
    BudgetOption,
    DataOption,
    ToleranceOption,
    WorkloadOption,
    chosen_budget,
    chosen_routes,
    distinct_budgets,
    options_of,
)
from topos_cli.shared.errors import ToposUsageError

#: The exit statuses, for `topos --help` (grade's and frontier's own help say them too).
EXIT_STATUS_HELP = (
    "Exit status: 0 ok (every route finished, the losses agree); 1 a route failed, or a "
    "peer route diverged from topos (--peer-tolerance); "
    "2 usage or data error; 3 parity broken (the routes' losses differ); 4 regression "
    "(against --baseline, --against, or in compare); 5 inconclusive (the time evidence "
    "too disturbed to judge); 6 loss bits changed (against --against, with "
    "--fail-on-bits-change); 130 interrupted (Ctrl-C or SIGTERM)."
)

#: The frontier's default budgets: relative to the floor, so every point can be graded
#: on any workload (a fixed 35% is below cifar10's floor of some 49%).
DEFAULT_FRONTIER_BUDGETS = "100%,floor+75%,floor+50%,floor+25%,floor"

#: `--warmup`, as hyperfine's: long only, for hyperfine's `-w` is its warm-up.
WarmupOption = Annotated[
    int,
    typer.Option(
        "--warmup",
        help="Warm-up steps each worker runs and throws away before its measured steps "
        "(0: none; memory settling still runs the step's computation).",
    ),
]


#: `--measure`: what a route is measured by. Time always; `instructions` adds the counts.
MeasureOption = Annotated[
    str,
    typer.Option(
        "--measure",
        help="time (the default), or time,instructions: after the timed runs, count the "
        "instructions each route's measured steps execute, under Valgrind's callgrind "
        "(one BLAS thread; start-up, loading and warm-up not counted). Counts do not "
        "follow the machine's load; they are blind to sleeps, I/O and memory stalls.",
    ),
]


def chosen_measures(text: str) -> tuple[str, ...]:
    """`--measure`'s measures besides time, checked: `()` or `("instructions",)`."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ("time", "instructions")]
    if unknown or not names:
        raise ToposUsageError(
            f"--measure {text!r}: expected time or time,instructions"
            + (f" ({unknown[0]!r} is neither)" if unknown else "")
        )
    return ("instructions",) if "instructions" in names else ()


def chosen_repeat(text: str) -> tuple[int, float | None]:
    """`--repeat`'s repeats a route to start with and `auto`'s budget (`None`: fixed)."""
    from topos_cli.judge.repeat_stopping import LEAST_REPEATS
    from topos_cli.shared.repeat_text import parse_repeat

    count, budget = parse_repeat(text)
    return (LEAST_REPEATS if count is None else count), budget


def grade_command(
    context: typer.Context,
    workload: WorkloadOption = "cifar10",
    steps: Annotated[
        int, typer.Option("--steps", "-n", help="Training steps per run (at least 1).")
    ] = 300,
    routes: Annotated[
        str,
        typer.Option(
            "--routes",
            help="Comma-separated routes to grade, in order: topos's engine, recorded, remat "
            "and the peers torch, torch-compile, jax. A PyTorch workload's (TorchWorkload): "
            "eager (the reference), checkpoint, checkpoint-unpreserved-rng, selective, "
            "compile, compile-budget-<0 to 1>; a JAX workload's (JaxWorkload), each jitted: "
            "jit (the reference), checkpoint-nothing-saveable, checkpoint-dots-saveable, "
            "checkpoint-names:<a+b>; and a native workload's routes of its own. Default: "
            "engine,recorded, a native workload's own defaults.",
        ),
    ] = "engine,recorded",
    repeat: Annotated[
        str,
        typer.Option(
            "--repeat",
            help="Runs per route, interleaved engine, recorded, recorded, engine, ...; or "
            "auto: 3 each, then one more round at a time (every side, interleaved) until "
            "each route's time interval is decisive (wholly beyond the tolerance or wholly "
            "within it) or the budget would run out: auto:20m, auto:600s (auto alone: "
            "10 minutes). The verdict is then judged as with a fixed number.",
        ),
    ] = "1",
    data: DataOption = "synthetic",
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="BLAS/OpenMP threads in each worker (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, "
            "MKL_NUM_THREADS); default: the libraries' own choice.",
        ),
    ] = None,
    json_path: Annotated[
        str | None,
        typer.Option(
            "--json",
            help="Where to write the result JSON; '-' for standard output. "
            "Default: results/grade-<workload>-<UTC timestamp>.json.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="An earlier result of this workload to compare with."),
    ] = None,
    tolerance: ToleranceOption = None,
    peer_tolerance: Annotated[
        str | None,
        typer.Option(
            "--peer-tolerance",
            help="How closely a peer route (torch, jax) must follow topos: step 0's "
            "relative loss difference and each gradient's relative error, and after step 0 "
            "the factor on float32's own drift (measured against float64 runs of topos and "
            "the peer); default loss=1e-5,gradient=1e-4,drift=10; one bare value sets loss "
            "and gradient. A peer beyond them diverges: exit 1.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", help="Seconds one run of a route may take before it is killed."),
    ] = 3600.0,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the verdict as a Markdown table.")
    ] = False,
    github_benchmark: Annotated[
        str | None,
        typer.Option(
            "--github-benchmark",
            help="Also write github-action-benchmark's customSmallerIsBetter JSON here.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="First check the gradients against finite differences (topos check); "
            "wrong gradients end the grade with exit 3 before any route is timed.",
        ),
    ] = False,
    budget: BudgetOption = None,
    warmup: WarmupOption = 1,
    measure: MeasureOption = "time",
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            help="A git ref of the project being graded (the working directory's "
            "repository: main, origin/main, HEAD~1, a commit) or a directory holding "
            "another checkout of it: its workload code (with the same topos; topos's own "
            "code where topos is the project) runs interleaved with this checkout's, and "
            "the verdict says how this checkout compares; a regression against it is "
            "exit 4. Both sides on the same code is refused (exit 2).",
        ),
    ] = None,
    fail_on_bits_change: Annotated[
        bool,
        typer.Option(
            "--fail-on-bits-change",
            help="With --against: a route whose loss bits differ from the other "
            "checkout's fails the grade, exit 6 (without it the change is said, not gated).",
        ),
    ] = False,
    export_csv: Annotated[
        str | None,
        typer.Option(
            "--export-csv",
            help="Also write one row per route as CSV here: wall ms/step median and "
            "interval, CPU ms/step, time against the reference (ratio, interval) and its "
            "judgement, peak RSS, training Δ, parity.",
        ),
    ] = None,
    export_markdown: Annotated[
        str | None,
        typer.Option(
            "--export-markdown", help="Also write the same rows as a Markdown table here."
        ),
    ] = None,
) -> None:
    """Grade the routes: speed, memory, and bit-for-bit parity of their losses.

    Each route trains in a fresh worker process of its own, one at a time; the
    parent measures time per step and peak memory, checks that the losses agree
    at every step, prints the verdict and writes the result as JSON.

    Exit status: 0 ok (every route finished, the losses agree, every peer route
    agrees); 1 a route failed, or a peer route (torch, jax) diverged from topos:
    beyond --peer-tolerance at step 0, or beyond 10x float32's own drift later;
    2 usage or data error; 3 parity broken (the routes' losses differ); 4 regression
    (against --baseline or --against); 5 inconclusive (the time evidence against
    --baseline or --against too thin or too disturbed to judge); 6 loss bits
    changed against --against (with --fail-on-bits-change); 130 interrupted
    (Ctrl-C, SIGTERM or SIGHUP). When several apply: 130, 2, 3, 1, 6, 4, 5, 0.

    Gate a pull request, from the project's checkout: topos grade --against
    origin/main --repeat auto:20m

    Example: topos grade --steps 50 --repeat 2 --json results/today.json

    Example: topos grade --routes engine,recorded,remat --budget 60%
    """
    from topos.names import BUILT_IN_WORKLOADS
    from topos_cli.commands.grade import GradeOptions, run_grade

    # A workload not built in may be a PyTorch step with routes of its own.
    open_names = context.params.get("workload") not in BUILT_IN_WORKLOADS
    routes, budget = chosen_routes(routes, open_names=open_names), chosen_budget(budget)
    repeats, repeat_budget = chosen_repeat(repeat)
    options = options_of(
        context,
        GradeOptions,
        routes=routes,
        budget=budget,
        measure=chosen_measures(measure),
        repeat=repeats,
        repeat_budget=repeat_budget,
    )
    raise typer.Exit(run_grade(options))


def frontier_command(
    context: typer.Context,
    workload: WorkloadOption = "cifar10",
    budgets: Annotated[
        str | None,
        typer.Option(
            "--budgets",
            help="Comma-separated remat budgets: percentages of recorded's planned bytes, "
            "bytes with a unit, floor, or floor+N% (N% of the way from the floor up to "
            "recorded's planned bytes). The default, 100%,floor+75%,floor+50%,floor+25%,"
            "floor, spans the floor to 100%, so no point falls below the floor. For a "
            "PyTorch step (TorchWorkload): activation memory budgets from 0 to 1 under "
            "torch.compile (0.5 or 50%; default 0.2,0.5,0.8), graded beside eager, "
            "checkpoint and selective (eager alone without blocks), or beside the routes "
            "named among them "
            "(eager,0.5). For a JAX step (JaxWorkload): its checkpoint policies, its "
            "routes (default: every one it offers).",
        ),
    ] = None,
    steps: Annotated[
        int, typer.Option("--steps", "-n", help="Training steps per point (at least 1).")
    ] = 300,
    data: DataOption = "synthetic",
    threads: Annotated[
        int | None, typer.Option("--threads", help="BLAS/OpenMP threads in each worker.")
    ] = None,
    json_path: Annotated[
        str | None,
        typer.Option(
            "--json",
            help="Where to write the result JSON ('-' for standard output); the picture "
            "goes beside it as SVG. Default: results/frontier-<workload>-<UTC timestamp>.json.",
        ),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds one point may take before it is killed.")
    ] = 3600.0,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the table as Markdown.")
    ] = False,
    warmup: WarmupOption = 1,
) -> None:
    """Grade engine, recorded and remat at each budget: the frontier of speed and memory.

    Each point is graded in a worker of its own, as grade does.

    Prints ms/step against training Δ and peak RSS per point, checks the losses bit for
    bit across every point, and writes the result JSON with an SVG picture beside it. A
    budget below the floor is listed, not graded. A PyTorch step's frontier is its
    activation memory budgets under torch.compile, PyTorch's partitioner's estimate
    beside each, a point measuring more memory than a larger budget's flagged; a JAX
    step's is its checkpoint policies.

    Exit status: 0 ok; 1 a point failed; 2 usage or data error; 3 parity broken;
    5 inconclusive; 130 interrupted.

    Example: topos frontier --workload mnist --budgets 100%,70%,floor --steps 100

    Example: topos frontier --workload examples/torch_transformer.py --budgets 0.2,0.5,0.8
    """
    from topos.names import BUILT_IN_WORKLOADS
    from topos_cli.commands.frontier import run_frontier
    from topos_cli.commands.grade import GradeOptions

    names = None
    if budgets is not None:
        names = [name.strip() for name in budgets.split(",")]
        if not all(names):
            raise ToposUsageError(f"--budgets {budgets!r} has an empty budget between commas")
    # A workload not built in may be a PyTorch or JAX step, whose budgets are its own:
    # read once its preflight has told what it is (`run_frontier`).
    chosen = ()
    if workload in BUILT_IN_WORKLOADS:
        chosen = distinct_budgets(names or DEFAULT_FRONTIER_BUDGETS.split(","))
    options = options_of(context, GradeOptions, routes=("engine", "recorded"), budgets=chosen)
    raise typer.Exit(run_frontier(options, budget_texts=names))
