"""`topos describe`: a route's plan, node by node, and what a training step adds to memory."""

from __future__ import annotations

from typing import Annotated

import typer

from topos_cli.commands.options import BudgetOption, RouteOption, WorkloadOption, chosen_budget
from topos_cli.commands.workload_program import load_program, sharded_line


def describe_command(
    route: RouteOption = "recorded",
    workload: WorkloadOption = "cifar10",
    summary: Annotated[
        bool,
        typer.Option(
            "--summary", help="Print only the summary lines (plan:, live volume:, budget:)."
        ),
    ] = False,
    budget: BudgetOption = None,
) -> None:
    """Print a route's plan: one line per node (per evaluation for remat), then the summary.

    Then what a training step adds to memory, part by part.

    Example: topos describe --route remat --budget 50%
    """
    program = load_program(workload, route, chosen_budget(budget))
    if route in ("recorded", "remat"):
        typer.echo(
            f"recorded the chain rule: {program.forward_nodes} forward nodes + "
            f"{program.gradient_nodes} gradient nodes"
        )
    if program.shards > 1:
        typer.echo(sharded_line(program))
    text = "\n".join(program.summary()) if summary else program.describe()
    typer.echo(text)
    if not summary:
        from topos.training import step_memory

        typer.echo(step_memory(program, program.workload.optimizer()).describe())
