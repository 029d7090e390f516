"""What a display hears of a run: the observer every monitor thread calls."""

from __future__ import annotations

from collections.abc import Sequence

from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.result.repeat import Repeat
from topos_cli.worker import protocol


class WorkerObserver:
    """What a display hears of a run; every method is called from some monitor thread.

    The defaults do nothing; a display overrides what it shows. An observer
    must not raise: a display that fails must not fail the measurement, so
    its errors are swallowed.
    """

    def started(self, request: WorkerRequest, pid: int) -> None:
        """The worker process `pid` started."""

    def event(self, request: WorkerRequest, event: protocol.Event) -> None:
        """The worker sent `event`."""

    def sampled(self, request: WorkerRequest, rss_bytes: int) -> None:
        """The worker's RSS was sampled."""

    def finished(self, request: WorkerRequest, result: Repeat) -> None:
        """The run ended as `result` says."""

    def planned(self, requests: Sequence[WorkerRequest]) -> None:
        """More runs were planned after the first ones (`--repeat auto`), to run next."""
