"""`topos check`: the command line of the gradient check (the check itself: check.py).

Its options go from what is checked (workload, routes, data, rows) to how (directions,
seed) to where the result goes (JSON).
"""

from __future__ import annotations

from typing import Annotated

import typer

from topos_cli.commands.options import DataOption, WorkloadOption, chosen_routes, options_of


def check_command(
    context: typer.Context,
    workload: WorkloadOption = "cifar10",
    routes: Annotated[
        str, typer.Option("--route", "-r", help="Comma-separated routes to check.")
    ] = "engine,recorded",
    data: DataOption = "synthetic",
    rows: Annotated[
        int,
        typer.Option("--rows", help="Rows of the first batch to differentiate (at most a shard)."),
    ] = 16,
    directions: Annotated[
        int, typer.Option("--directions", "-k", help="Random directions per parameter.")
    ] = 3,
    seed: Annotated[int, typer.Option("--seed", help="Seeds the directions.")] = 0,
    json_path: Annotated[
        str | None,
        typer.Option("--json", help="Also write the result as JSON here; '-' for standard output."),
    ] = None,
) -> None:
    """Check each route's gradient against finite differences, in float64.

    Parity cannot tell a wrong derivative rule: both routes run the same rules. This
    compares each parameter's gradient with central differences of the loss along
    random directions, names the first wrong rule (checking every node on its own),
    and runs the float32 routes on the same rows bit for bit.

    Exit status: 0 every gradient right; 2 bad input; 3 a gradient is wrong (the rule
    is named) or the float32 routes part.

    Example: topos check --workload mnist --directions 5 --json check.json
    """
    from topos_cli.commands.check import CheckOptions, run_check

    chosen = chosen_routes(routes, "--route", "each route is checked once")
    options = options_of(context, CheckOptions, routes=chosen)
    raise typer.Exit(run_check(options))
