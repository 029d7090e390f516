"""One run of one route to make: the worker's command, which repeat, its time limit,
which checkout's code, and the environment it runs in."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from topos.names import is_peer
from topos_cli.harness.other_checkout import AGAINST_LABEL
from topos_cli.harness.worker_environment import peer_environment, worker_environment
from topos_cli.worker.protocol import WorkerCommand


@dataclass(frozen=True)
class WorkerRequest(WorkerCommand):
    """One run to make: the worker's command, which repeat it is, and its time limit."""

    #: 0-based index among this route's runs.
    repeat: int = 0
    #: Seconds before the run is killed and marked timed out; `None` waits for ever.
    timeout: float | None = None
    #: Another checkout of the project whose code this runs (`grade --against`), or
    #: `None` for this checkout's.
    checkout: str | None = None
    #: Whether the worker knows `--hold` (a worker of an older checkout may not).
    holds: bool = True
    #: The other checkout's worker's PYTHONPATH and working directory (`side_paths`).
    pythonpath: str | None = None
    working_directory: str | None = None
    #: A frontier point's name when its plan stands for several budgets
    #: (`remat@floor+25%=floor`); `None`: named by its route and budget.
    point: str | None = None

    @property
    def label(self) -> str:
        """The route as its runs are named: `recorded`, or `recorded@against` for a run
        of the other checkout."""
        return self.route if self.checkout is None else f"{self.route}@{AGAINST_LABEL}"

    def command(self) -> list[str]:
        """The worker's command line."""
        return [sys.executable, *self.arguments()]


def request_environment(
    request: WorkerRequest, environment: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment `request`'s worker runs in: the grade's (or `worker_environment`'s),
    a peer's settings for a peer route, and the other checkout's path for its workers."""
    chosen = dict(worker_environment(None) if environment is None else environment)
    if is_peer(request.route):
        chosen = peer_environment(chosen)
    if request.checkout is not None and request.pythonpath is not None:
        # The other checkout's worker: its code first on the path (see other_checkout).
        chosen["PYTHONPATH"] = request.pythonpath
    return chosen
