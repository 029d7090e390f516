"""Figures drawn side by side, each but the first in a forked copy of the drawing process.

A grade's report is drawn after its last worker has ended, when both cores are
idle, and its three figures take about 0.45 s one after another. A fork of a
process that has matplotlib loaded starts in a millisecond and shares its
pages, so each figure but the first is drawn in a fork of its own and sent back
over a pipe as text, while this process draws the first. The text is the same
either way (every figure's SVG ids are salted with its name, not counted).

Where a fork is unsafe (another thread running: a fork copies only the calling
thread, and a lock the others held stays locked in the copy) or impossible (not
Linux), or where a fork fails to deliver its figure, the figure is drawn here,
so a drawing failure is raised in this process as it would have been.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from topos_cli.shared.forked_copy import ForkedCopy, forking_is_safe

#: A drawing: makes one figure and returns its text (an SVG element).
Drawing = Callable[[], str]


def draw_side_by_side(drawings: Mapping[str, Drawing]) -> dict[str, str]:
    """The text of every drawing, by name in the order given; drawn at once where a fork
    is safe, else one after another."""
    names = list(drawings)
    if len(names) < 2 or not forking_is_safe():
        return {name: drawings[name]() for name in names}
    copies = {name: _start(drawings[name]) for name in names[1:]}
    texts: dict[str, str] = {}
    try:
        texts[names[0]] = drawings[names[0]]()
        for name in names[1:]:
            copy = copies.pop(name)
            data = None if copy is None else copy.collect()
            texts[name] = drawings[name]() if data is None else data.decode("utf-8")
    finally:
        for copy in copies.values():  # left behind by a failure here: end them
            if copy is not None:
                copy.abandon()
    return {name: texts[name] for name in names}


def _start(drawing: Drawing) -> ForkedCopy | None:
    """`drawing` started in a forked copy, its text to come back as UTF-8."""
    return ForkedCopy.start(lambda: drawing().encode("utf-8"))
