"""Workload names the parent can check without loading the library.

`topos_cli.workloads.resolve` is authoritative, but it records models with
the library, which the parent process must never import. So the parent only
refuses names that cannot possibly resolve — neither built in, nor a
registered entry point (read from package metadata, never imported), nor of
the form `package.module:attribute` — and leaves the rest to the worker. A
test keeps `BUILT_IN` equal to the registry's.
"""

from __future__ import annotations

import re
from importlib.metadata import entry_points

from topos_cli.errors import ToposUsageError

#: The workloads topos ships.
BUILT_IN = ("cifar10", "mnist")

#: A module's dotted name: identifiers joined by dots.
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")

#: The entry-point group under which packages register their own workloads.
ENTRY_POINT_GROUP = "topos.workloads"


def check_workload_name(name: str) -> None:
    """Raises `ToposUsageError` (the registry's one line) if `name` cannot name a workload."""
    if not name.strip():
        raise ToposUsageError("--workload names no workload")
    if name in BUILT_IN:
        return
    if ":" in name:
        module, _, attribute = name.partition(":")
        if not _DOTTED_NAME.fullmatch(module) or not attribute.isidentifier():
            raise ToposUsageError(
                f"--workload {name!r}: name a workload as package.module:attribute"
            )
        return
    if any(entry.name == name for entry in entry_points(group=ENTRY_POINT_GROUP)):
        return
    raise ToposUsageError(
        f"unknown workload {name!r}; built in: {', '.join(BUILT_IN)}; "
        f"or name one as package.module:attribute"
    )
