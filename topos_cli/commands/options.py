"""The options several commands share, and how a list of routes is read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from topos_cli.shared.errors import ToposUsageError

WorkloadOption = Annotated[
    str,
    typer.Option(
        "--workload",
        "-w",
        help="cifar10, mnist, gpt, llama (cifar10-threads, gpt-threads: their second shard on a "
        "thread; cifar10-winograd: Winograd convolutions), a topos.workloads entry point, or "
        "package.module:attribute.",
    ),
]
RouteOption = Annotated[str, typer.Option("--route", "-r", help="engine, recorded or remat.")]
BudgetOption = Annotated[
    str | None,
    typer.Option(
        "--budget",
        help="The remat route's memory budget: bytes with a unit (64MiB), a percentage of "
        "the recorded route's planned bytes (50%), or floor. Default: 50%, or the floor "
        "where that is more.",
    ),
]
DataOption = Annotated[
    str,
    typer.Option("--data", help="A directory holding the real data files, or 'synthetic'."),
]
ToleranceOption = Annotated[
    str | None,
    typer.Option(
        "--tolerance",
        help="Regression tolerance, as compare judges it: e.g. time=10%,memory=5% (the "
        "default); one bare value sets both.",
    ),
]

#: What a command's options are gathered into: `GradeOptions`, `CheckOptions`.
Options = TypeVar("Options")


def options_of(
    context: typer.Context, options_type: Callable[..., Options], **parsed: Any
) -> Options:
    """A command's options as `options_type`, whose fields its parameters are named after:
    every parameter as given, the `parsed` ones (read from their text, or fixed by the
    command) in their place. A parameter with no field of its name is a TypeError."""
    return options_type(**{**context.params, **parsed})


def chosen_routes(text: str) -> tuple[str, ...]:
    """The routes a comma-separated option names, in order; a usage error (one line,
    exit 2) for an unknown, repeated or empty one."""
    from topos.names import UnknownNameError, parse_routes

    try:
        return parse_routes(text)
    except UnknownNameError as error:
        raise ToposUsageError(str(error)) from None


def chosen_budget(text: str | None) -> str | None:
    """`--budget` as typed, once it names a budget; a usage error (one line, exit 2)
    otherwise. Read without NumPy: the grading parent checks it before any worker."""
    if text is None:
        return None
    from topos.budget_text import BudgetTextError, parse_budget

    try:
        parse_budget(text)
    except BudgetTextError as error:
        raise ToposUsageError(str(error)) from None
    return text.strip()
