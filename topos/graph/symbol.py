"""Symbol: the detached, hashable name of one node, the only currency after sealing."""

from __future__ import annotations

from typing import NamedTuple


class Symbol(NamedTuple):
    """Names node `index` of the tape (and so the network) identified by `origin`."""

    origin: int
    index: int

    def __repr__(self) -> str:
        return f"Symbol(%{self.index})"
