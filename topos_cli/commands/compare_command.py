"""`topos compare`: two grade results of one workload, route by route, regressions flagged."""

from __future__ import annotations

from typing import Annotated

import typer

from topos_cli.commands.command_failure import fail
from topos_cli.commands.options import ToleranceOption


def compare_command(
    old: Annotated[str, typer.Argument(help="The earlier result JSON.", show_default=False)],
    new: Annotated[str, typer.Argument(help="The later result JSON.", show_default=False)],
    tolerance: ToleranceOption = None,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the comparison as a Markdown table.")
    ] = False,
) -> None:
    """Compare two grade results of one workload and flag regressions.

    Route by route: ms/step, peak RSS and training delta. Time is judged on the
    repeats (worker processes), leaving out steps their CPU time cannot explain.

    Exit status: 0 nothing judged a regression (the summary says "no regression
    beyond" the tolerance only where every interval lies within it, else what the
    interval allows); 1 a route of NEW did not finish; 2 not a result, or results
    of other workload, steps, data or shards; 4 a regression
    beyond the tolerance; 5 inconclusive (fewer than 3 usable repeats a side, or
    too many disturbed steps); 130 interrupted. Several: 130, 2, 1, 4, 5, 0.

    Example: topos compare results/before.json results/after.json --tolerance time=5%
    """
    from topos_cli.judge.compare import compare_results
    from topos_cli.render.comparison_table import print_comparison
    from topos_cli.result.result_file import load_result
    from topos_cli.result.tolerance import parse_tolerance

    if old == new == "-":
        fail("OLD and NEW are both '-': standard input can be read only once; name a file for one")
    settings = parse_tolerance(tolerance)
    comparison = compare_results(
        load_result(old), load_result(new), settings=settings, old_source=old, new_source=new
    )
    print_comparison(comparison, markdown=markdown)
    raise typer.Exit(comparison.exit_status)
