"""`topos train`: one route trained in this process, printing exactly the seed program's lines."""

from __future__ import annotations

from typing import Annotated

import typer

from topos_cli.commands.command_failure import fail
from topos_cli.commands.options import (
    BudgetOption,
    DataOption,
    RouteOption,
    WorkloadOption,
    chosen_budget,
)
from topos_cli.commands.workload_program import lowered_here, sharded_line
from topos_cli.shared.bounds import MOST_STEPS, check_count


def train_command(
    route: RouteOption = "engine",
    workload: WorkloadOption = "cifar10",
    steps: Annotated[int, typer.Option("--steps", "-n", min=1, help="Training steps.")] = 300,
    data: DataOption = "synthetic",
    budget: BudgetOption = None,
) -> None:
    """Train one route in this process, printing exactly the seed program's lines.

    Two routes can still be compared by hand with diff.

    Example: topos train --route recorded --steps 50
    """
    import time

    from topos.datasets.errors import DataError
    from topos.training import Training
    from topos_cli.harness.data_option import data_directory

    check_count("--steps", steps, most=MOST_STEPS)
    directory = data_directory(data)
    from topos.workloads import resolve

    budget = chosen_budget(budget) if route == "remat" else None

    def ready() -> Training:
        # Recorded and lowered once, by Training: a program lowered first only to check
        # the workload searched remat's schedules twice (a GRU of one's own at the
        # default budget: two floor bisections before the first step).
        resolved = resolve(workload)
        try:
            dataset = resolved.dataset(directory)
        except DataError as error:
            fail(str(error))
        return Training(resolved, route, dataset, steps, budget)

    training = lowered_here(workload, ready)
    dataset = training.dataset
    unit = getattr(dataset.train, "unit", "images")
    typer.echo(f"route {route}: {steps} steps over {len(dataset.train)} {unit}")
    # Standard output carries exactly the seed's lines; which data was used goes beside it.
    typer.echo(f"data: {dataset.name} from {dataset.source} ({dataset.format})", err=True)
    if route in ("recorded", "remat"):
        typer.echo(
            f"recorded the chain rule: {training.program.forward_nodes} forward nodes + "
            f"{training.program.gradient_nodes} gradient nodes"
        )
    if training.program.shards > 1:
        typer.echo(sharded_line(training.program))
    for line in training.summary():
        typer.echo(line)
    typer.echo(training.step_memory().describe())
    first = last = None
    started = time.perf_counter()
    for step in range(steps):
        last = training.step(step)
        if step == 0:
            first = last
    elapsed = time.perf_counter() - started
    typer.echo(
        f"loss step 0: {first:.6f} ({int(first.view('uint32')):08x}), "
        f"step {steps - 1}: {last:.6f} ({int(last.view('uint32')):08x})"
    )
    typer.echo(
        f"route {route}: {steps} steps in {elapsed:.3f}s ({elapsed * 1000.0 / steps:.1f} ms/step)"
    )
