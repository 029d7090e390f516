"""Finding a workload by name: built in, registered as an entry point, `module:attribute`,
or its file's path (`path/to/file.py[:attribute]`)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator

from topos.names import (
    BUILT_IN_WORKLOADS,
    DOTTED_NAME,
    ENTRY_POINT_GROUP,
    UnknownNameError,
    workload_file_of,
)
from topos.system.signal_witness import witnessed_signals
from topos.training.workload import Workload
from topos.workloads.user_code_error import user_line
from topos.workloads.workload_file import import_workload_file, module_name_of


class WorkloadNotFoundError(UnknownNameError):
    """A workload name that names nothing loadable; the message says why in one line."""


class MissingFrameworkError(WorkloadNotFoundError):
    """A native workload whose framework (PyTorch, JAX) is not installed: refused by the
    grade's preflight in one line before any worker starts."""


def _check(candidate: object, name: str) -> Workload:
    from topos.native.native_workload import NativeWorkload

    # A native workload (a PyTorch step) is graded by its own routes (`topos.native`).
    if not isinstance(candidate, (Workload, NativeWorkload)):
        raise WorkloadNotFoundError(
            f"workload {name!r} is a {type(candidate).__name__}, not a topos Workload"
        )
    return candidate


@contextlib.contextmanager
def _loading(name: str, failure: str) -> Iterator[None]:
    """Turns anything a workload's module does wrong while it is imported (raises, has a
    syntax error, calls `sys.exit`, raises `KeyboardInterrupt` or another
    `BaseException`) into one `WorkloadNotFoundError` line; an interrupt stays an
    interrupt only when a signal was in fact sent (`signal_witness`)."""
    with witnessed_signals() as signalled:
        try:
            yield
        except WorkloadNotFoundError:
            raise
        except KeyboardInterrupt:
            if signalled():
                raise
            raise WorkloadNotFoundError(
                f"workload {name!r}: {failure}: its code raised KeyboardInterrupt as it "
                f"was imported (no signal was sent)"
            ) from None
        except BaseException as error:
            _raise_loading_error(name, failure, error)


def _raise_loading_error(name: str, failure: str, error: BaseException) -> None:
    """Raises the one `WorkloadNotFoundError` line for what a module raised at import."""
    if isinstance(error, SystemExit):
        raise WorkloadNotFoundError(
            f"workload {name!r}: {failure}: it called sys.exit({error.code!r}) as it was imported"
        ) from None
    if isinstance(error, ModuleNotFoundError) and error.name in ("torch", "jax"):
        # A native workload's framework is an optional extra: said as such, in one line.
        raise MissingFrameworkError(
            f"workload {name!r} needs {error.name}, which is not installed: "
            f"pip install 'topos[{error.name}]'"
        ) from None
    message = " ".join(str(error).split())
    cause = f"{type(error).__name__}: {message}" if message else type(error).__name__
    # A syntax error names its file and line in its message; an error its code raised
    # is told by the line that raised it.
    line = None if isinstance(error, SyntaxError) else user_line(error)
    where = f", raised at {line}" if line else ""
    raise WorkloadNotFoundError(f"workload {name!r}: {failure} ({cause}){where}") from None


def _entry_points():
    """The registered workloads' entry points. Package metadata is read only when a name
    is neither built in nor `module:attribute`: importing it costs a worker some 3 MiB."""
    from importlib.metadata import entry_points

    return entry_points(group=ENTRY_POINT_GROUP)


def resolve(name: str) -> Workload:
    """The workload called `name`: `cifar10`, `mnist`, an entry point of group
    `topos.workloads`, `package.module:attribute`, or `path/to/file.py[:attribute]`
    (`workload` when no attribute is named)."""
    if name in BUILT_IN_WORKLOADS:
        module = importlib.import_module(f"topos.workloads.{name.replace('-', '_')}")
        return module.workload
    named_file = workload_file_of(name)
    if named_file is not None:
        return _from_file(name, *named_file)
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        if not DOTTED_NAME.fullmatch(module_name) or not attribute.isidentifier():
            raise WorkloadNotFoundError(f"workload {name!r}: name it as package.module:attribute")
        with _loading(name, f"cannot import {module_name!r}"):
            module = importlib.import_module(module_name)
        if not hasattr(module, attribute):
            raise WorkloadNotFoundError(f"workload {name!r}: {module_name!r} has no {attribute!r}")
        return _check(getattr(module, attribute), name)
    for entry in _entry_points():
        if entry.name == name:
            with _loading(name, f"cannot load entry point {entry.value!r}"):
                candidate = entry.load()
            return _check(candidate, name)
    raise WorkloadNotFoundError(
        f"unknown workload {name!r}; built in: {', '.join(BUILT_IN_WORKLOADS)}; "
        f"or name one as package.module:attribute"
    )


def _from_file(name: str, path: str, attribute: str) -> Workload:
    """The workload `attribute` of the file at `path`, refused in one line naming the file
    when it is not there, cannot be imported, or holds no such workload."""
    if not attribute.isidentifier():
        raise WorkloadNotFoundError(
            f"workload {name!r}: name a workload in a file as path/to/file.py:attribute"
        )
    # A syntax error says its file and line itself; whatever else it raises, the line
    # names the file.
    with _loading(name, f"cannot import {path}"):
        module = import_workload_file(path)
    if not hasattr(module, attribute):
        raise WorkloadNotFoundError(
            f"workload {name!r}: {path} has no {attribute!r}; name its workload as {path}:attribute"
        )
    return _check(getattr(module, attribute), name)


def module_of(name: str) -> str | None:
    """The name of the module that defines the workload called `name` (what `resolve`
    imports for it), or `None` when `name` names nothing loadable: `topos.workloads.mnist`
    for `mnist`, `package.module` for `package.module:attribute`, an entry point's module,
    a file's stem for `path/to/file.py`.
    What `topos grade --against` records of each side's code."""
    if name in BUILT_IN_WORKLOADS:
        return f"topos.workloads.{name.replace('-', '_')}"
    named_file = workload_file_of(name)
    if named_file is not None:
        return module_name_of(named_file[0])
    if ":" in name:
        return name.partition(":")[0]
    for entry in _entry_points():
        if entry.name == name:
            return entry.module
    return None


def available() -> list[str]:
    """The names `resolve` knows without an explicit `module:attribute`."""
    registered = [entry.name for entry in _entry_points()]
    return [*BUILT_IN_WORKLOADS, *sorted(set(registered) - set(BUILT_IN_WORKLOADS))]
