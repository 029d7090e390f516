"""How `topos data fetch` shows a download: a rich progress bar, or a few plain lines.

`download_progress(stream)` yields the callback `topos.datasets.fetch` calls as
bytes arrive (file name, bytes so far, total or None). On a terminal (and
without NO_COLOR) it drives a rich bar with size, speed and ETA; otherwise it
writes one line when a file starts and one when it is complete.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from topos_cli.shared.output_stream import use_plain_output
from topos_cli.shared.units import format_bytes

#: What fetch calls: (file name, bytes so far, total bytes or None).
ProgressCallback = Callable[[str, int, "int | None"], None]

#: Seconds between the plain display's lines while a file downloads.
PLAIN_INTERVAL_SECONDS = 10.0


@contextlib.contextmanager
def plain_download_progress(
    stream: TextIO, interval: float = PLAIN_INTERVAL_SECONDS
) -> Iterator[ProgressCallback]:
    """Lines on `stream`: `downloading NAME (SIZE)`, then every `interval` seconds
    `NAME: DONE of SIZE` (a slow download is seen to move, or not), then
    `downloaded NAME (SIZE)`."""
    announced: set[str] = set()
    reported = {"at": time.monotonic()}

    def progress(name: str, done: int, total: int | None) -> None:
        now = time.monotonic()
        if name not in announced:
            announced.add(name)
            reported["at"] = now
            stream.write(f"downloading {name} ({format_bytes(total, missing='unknown size')})\n")
            stream.flush()
        elif now - reported["at"] >= interval and (total is None or done < total):
            reported["at"] = now
            of = "" if total is None else f" of {format_bytes(total)}"
            stream.write(f"{name}: {format_bytes(done)}{of}\n")
            stream.flush()
        if total is not None and done >= total:
            stream.write(f"downloaded {name} ({format_bytes(done)})\n")
            stream.flush()

    yield progress


@contextlib.contextmanager
def live_download_progress(stream: TextIO) -> Iterator[ProgressCallback]:
    """A rich progress bar per file on `stream`: bytes, speed and time left."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bars = Progress(
        TextColumn("{task.description}", style="bold"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(file=stream),
    )
    tasks: dict[str, int] = {}

    def progress(name: str, done: int, total: int | None) -> None:
        if name not in tasks:
            tasks[name] = bars.add_task(name, total=total)
        bars.update(tasks[name], completed=done, total=total)

    with bars:
        yield progress


def download_progress(stream: TextIO) -> contextlib.AbstractContextManager[ProgressCallback]:
    """The live bar on a terminal without NO_COLOR, plain lines otherwise."""
    if use_plain_output(stream):
        return plain_download_progress(stream)
    return live_download_progress(stream)
