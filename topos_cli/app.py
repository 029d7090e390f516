"""The `topos` command line: its commands and their options.

NumPy and the library load lazily, inside the commands that need them, so
`topos --help` answers at once and `topos grade` (whose parent process must stay
light) never loads them at all.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from topos_cli.errors import ExitStatus, ToposError

application = typer.Typer(
    help="Grade the gradient routes of a workload: which is faster, which is leaner, "
    "and do they still train bit-identically.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

WorkloadOption = Annotated[
    str,
    typer.Option(
        "--workload",
        "-w",
        help="cifar10, mnist, a topos.workloads entry point, or package.module:attribute.",
    ),
]
RouteOption = Annotated[str, typer.Option("--route", "-r", help="engine or recorded.")]
DataOption = Annotated[
    str,
    typer.Option("--data", help="A directory holding the real data files, or 'synthetic'."),
]


def fail(message: str, status: int = ExitStatus.USAGE) -> None:
    """Ends the command with a one-line error on stderr and a non-zero exit."""
    typer.echo(f"topos: error: {message}", err=True)
    raise typer.Exit(status)


def version_callback(value: bool) -> None:
    """Prints the version and exits."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"topos {version('topos')}")
        except PackageNotFoundError:
            typer.echo("topos (not installed)")
        raise typer.Exit()


@application.callback()
def root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """topos: which way of computing gradients is faster, leaner, and still exactly right."""


def _program(workload_name: str, route: str):
    from topos.errors import GraphError, ShapeError
    from topos_cli.workloads import RouteProgram, WorkloadNotFoundError, resolve

    try:
        workload = resolve(workload_name)
        return RouteProgram(workload, route)
    except WorkloadNotFoundError as error:
        fail(str(error))
    except (ShapeError, GraphError) as error:
        fail(f"workload {workload_name!r} failed to record: {error}")
    except ValueError as error:
        fail(str(error))


@application.command()
def describe(
    route: RouteOption = "recorded",
    workload: WorkloadOption = "cifar10",
    summary: Annotated[
        bool, typer.Option("--summary", help="Print only the plan: and live volume: lines.")
    ] = False,
) -> None:
    """Print a route's plan: one line per node with its liveness, then the summary.

    Example: topos describe --route recorded --summary
    """
    program = _program(workload, route)
    if route == "recorded":
        typer.echo(
            f"recorded the chain rule: {program.forward_nodes} forward nodes + "
            f"{program.gradient_nodes} gradient nodes"
        )
    text = "\n".join(program.plan.summary()) if summary else program.plan.describe()
    typer.echo(text)


@application.command()
def run(
    route: RouteOption = "engine",
    workload: WorkloadOption = "cifar10",
    steps: Annotated[int, typer.Option("--steps", "-n", min=1, help="Training steps.")] = 300,
    data: DataOption = "synthetic",
) -> None:
    """Train one route in this process, printing exactly the seed program's lines,
    so two routes can be compared by hand with diff.

    Example: topos run --route recorded --steps 50
    """
    import time

    from topos.datasets.errors import DataError
    from topos_cli.workloads import Training

    program = _program(workload, route)
    try:
        dataset = program.workload.load_dataset(None if data == "synthetic" else data)
        training = Training(program.workload, route, dataset, steps)
    except DataError as error:
        fail(str(error))
    typer.echo(f"route {route}: {steps} steps over {len(dataset.train)} images")
    # Standard output carries exactly the seed's lines; which data was used goes beside it.
    typer.echo(f"data: {dataset.name} from {dataset.source} ({dataset.format})", err=True)
    if route == "recorded":
        typer.echo(
            f"recorded the chain rule: {training.program.forward_nodes} forward nodes + "
            f"{training.program.gradient_nodes} gradient nodes"
        )
    for line in training.summary():
        typer.echo(line)
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


def main() -> None:
    """Entry point of the console script: one-line errors, distinct exit statuses."""
    try:
        application()
    except ToposError as error:
        typer.echo(f"topos: error: {error}", err=True)
        sys.exit(error.exit_status)
    except KeyboardInterrupt:
        typer.echo("topos: interrupted", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except Exception as error:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("TOPOS_DEBUG"):
            raise
        typer.echo(
            f"topos: internal error: {type(error).__name__}: {error} "
            f"(set TOPOS_DEBUG=1 to see the traceback)",
            err=True,
        )
        sys.exit(ExitStatus.ROUTE_FAILED)


if __name__ == "__main__":
    main()
