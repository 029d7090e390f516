"""A workload's route lowered in this process, for the commands that run one here
(`describe`, `train`): its errors are the user's, said in one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from topos_cli import count_own_frames_as_machinery
from topos_cli.commands.command_failure import fail
from topos_cli.commands.user_code import user_code_error_line

T = TypeVar("T")


def load_program(workload_name: str, route: str, budget: str | None = None) -> Any:
    """The `RouteProgram` of `route` on the workload named `workload_name` (a budget for
    remat only); a workload that cannot be found or recorded ends the command in one line."""
    from topos.training import RouteProgram
    from topos.workloads import resolve

    return lowered_here(
        workload_name,
        lambda: RouteProgram(resolve(workload_name), route, budget if route == "remat" else None),
    )


def lowered_here(workload_name: str, lower: Callable[[], T]) -> T:
    """What `lower()` returns (the workload named `workload_name` resolved, recorded and
    lowered in this process); a workload that cannot be found, recorded or lowered
    (a budget below the floor) ends the command in one line."""
    from topos.errors import BudgetError, GraphError, ShapeError
    from topos.workloads import WorkloadNotFoundError

    count_own_frames_as_machinery()

    try:
        return lower()
    except (WorkloadNotFoundError, BudgetError) as error:
        fail(str(error))
    except (ShapeError, GraphError) as error:
        fail(f"workload {workload_name!r} failed to record: {error}")
    except ValueError as error:
        # Raised from the user's own lines (a bad init shape in `record`): name them.
        fail(user_code_error_line(error) or str(error))
    raise AssertionError("unreachable: fail() ends the command")


def sharded_line(program: Any) -> str:
    """What `describe` and `train` say of a sharded program before its plan's lines."""
    if program.shard_processes:
        where = ": the first in this process, the others each in a forked process of its own"
    elif program.workload.shard_processes is None:
        where = " on a thread of its own (shard processes need Linux)"
    else:
        where = " on a thread of its own"
    return f"sharded: {program.shards} shards of {program.rows} rows, each running this plan{where}"
