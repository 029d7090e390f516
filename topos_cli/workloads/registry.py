"""Finding a workload by name: built in, registered as an entry point, or `module:attribute`."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from topos_cli.workloads.workload import Workload

BUILT_IN = ("cifar10", "mnist")
ENTRY_POINT_GROUP = "topos.workloads"


class WorkloadNotFoundError(ValueError):
    """A workload name that names nothing loadable; the message says why in one line."""


def _check(candidate: object, name: str) -> Workload:
    if not isinstance(candidate, Workload):
        raise WorkloadNotFoundError(
            f"workload {name!r} is a {type(candidate).__name__}, not a topos Workload"
        )
    return candidate


def resolve(name: str) -> Workload:
    """The workload called `name`: `cifar10`, `mnist`, an entry point of group
    `topos.workloads`, or `package.module:attribute`."""
    if name in BUILT_IN:
        module = importlib.import_module(f"topos_cli.workloads.{name}")
        return module.workload
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise WorkloadNotFoundError(
                f"workload {name!r}: cannot import {module_name!r} ({error})"
            ) from None
        if not hasattr(module, attribute):
            raise WorkloadNotFoundError(f"workload {name!r}: {module_name!r} has no {attribute!r}")
        return _check(getattr(module, attribute), name)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            return _check(entry.load(), name)
    raise WorkloadNotFoundError(
        f"unknown workload {name!r}; built in: {', '.join(BUILT_IN)}; "
        f"or name one as package.module:attribute"
    )


def available() -> list[str]:
    """The names `resolve` knows without an explicit `module:attribute`."""
    registered = [entry.name for entry in entry_points(group=ENTRY_POINT_GROUP)]
    return [*BUILT_IN, *sorted(set(registered) - set(BUILT_IN))]
