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
        "thread; cifar10-winograd: Winograd convolutions), a topos.workloads entry point, "
        "package.module:attribute, or a file's path, path/to/file.py[:attribute] (its "
        "`workload` unless named): a topos Workload, or your own PyTorch or JAX step (a "
        "topos.native TorchWorkload or JaxWorkload).",
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

#: The most budgets one frontier grades (each is a worker run in turn).
MOST_BUDGETS = 100

#: What a command's options are gathered into: `GradeOptions`, `CheckOptions`.
Options = TypeVar("Options")


def options_of(
    context: typer.Context, options_type: Callable[..., Options], **parsed: Any
) -> Options:
    """A command's options as `options_type`, whose fields its parameters are named after:
    every parameter as given, the `parsed` ones (read from their text, or fixed by the
    command) in their place. A parameter with no field of its name is a TypeError."""
    return options_type(**{**context.params, **parsed})


def chosen_routes(
    text: str, option: str = "--routes", twice: str = "use --repeat", open_names: bool = False
) -> tuple[str, ...]:
    """The routes a comma-separated option names, in order; a usage error (one line,
    exit 2, naming `option` and, for a route named twice, saying `twice`) for an
    unknown, repeated or empty one (with `open_names`, a name of no topos route is kept
    for a native workload to judge: `topos.names.parse_routes`)."""
    from topos.names import UnknownNameError, parse_routes

    try:
        return parse_routes(text, option, twice, open_names)
    except UnknownNameError as error:
        raise ToposUsageError(str(error)) from None


def chosen_budget(text: str | None, option: str = "--budget") -> str | None:
    """`--budget` as typed, once it names a budget; a usage error (one line, exit 2)
    otherwise. Read without NumPy: the grading parent checks it before any worker."""
    if text is None:
        return None
    from topos.budget_text import BudgetTextError, parse_budget

    try:
        parse_budget(text)
    except BudgetTextError as error:
        # The text says `--budget`; a frontier's come from `--budgets`.
        raise ToposUsageError(str(error).replace("--budget ", f"{option} ", 1)) from None
    return text.strip()


def distinct_budgets(texts: list[str]) -> tuple[str, ...]:
    """The budgets `texts` name, each once, in order: two texts that name one budget
    (`floor` and `FLOOR`, `64MiB` and `67108864B`, `50%` and `50.0%`) are one point of a
    frontier, graded once. A usage error (one line, exit 2) for one that names none."""
    from topos.budget_text import parse_budget

    if len(texts) > MOST_BUDGETS:
        raise ToposUsageError(
            f"--budgets names {len(texts)} budgets; a frontier grades at most {MOST_BUDGETS}"
        )
    chosen: dict[tuple[str, object], str] = {}
    for text in texts:
        budget = chosen_budget(text, "--budgets")
        value = parse_budget(budget)
        # A share and a size are never the same budget before the plan is known.
        chosen.setdefault((type(value).__name__, value), budget)
    return tuple(chosen.values())
