"""How a repeat (one worker's measured series of a route) is named to people."""

from __future__ import annotations


def repeat_label(route: str, repeat: int, name_repeats: bool) -> str:
    """The route, and its 1-based repeat when there are several."""
    return f"{route} (repeat {repeat + 1})" if name_repeats else route
