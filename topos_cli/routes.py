"""The gradient routes a grade can run, named without loading the library.

The parent process must not import `topos` (or `topos_cli.workloads`, which
records models with it), yet it must refuse an unknown route before any worker
starts; so the names live here too, and a test keeps them equal to
`topos_cli.workloads.ROUTES`.
"""

from __future__ import annotations

from topos_cli.errors import ToposUsageError

#: Every route, the reference first.
ROUTES = ("engine", "recorded")


def parse_routes(text: str) -> tuple[str, ...]:
    """The routes of a comma-separated list such as `engine,recorded`, in its order.

    Raises `ToposUsageError` (one line, naming the offending name) for an
    unknown, repeated or empty route.
    """
    names = [name.strip() for name in text.split(",")]
    if not any(names):
        raise ToposUsageError(f"--routes names no route; routes are {', '.join(ROUTES)}")
    seen: list[str] = []
    for name in names:
        if not name:
            raise ToposUsageError(f"--routes {text!r} has an empty name between commas")
        if name not in ROUTES:
            raise ToposUsageError(f"unknown route {name!r}; routes are {', '.join(ROUTES)}")
        if name in seen:
            raise ToposUsageError(f"route {name!r} is named twice in --routes; use --repeat")
        seen.append(name)
    return tuple(seen)
