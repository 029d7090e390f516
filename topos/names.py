"""The names of the gradient routes and of the built-in workloads, and their checks.

NumPy-free on purpose: the grading parent process reads these without loading the
library (it refuses a bad `--routes` or `--workload` before any worker starts), and
the library's own workloads and programs use the very same names.
"""

from __future__ import annotations

import os
import re

#: Every gradient route, the reference first: `remat` is `recorded` lowered under a
#: memory budget, recomputing what it cannot keep.
ROUTES = ("engine", "recorded", "remat")

#: The peer routes: the same recording run by another framework (its own autodiff and
#: optimizer; see `topos.peers`): `torch` (eager PyTorch), `torch-compile` (the loss
#: through `torch.compile`), `jax` (`jax.grad` under `jax.jit`). Any workload offers them.
PEER_ROUTES = ("torch", "torch-compile", "jax")

#: Each peer route's module (looked for, never imported, by the grading parent) and the
#: extra that installs it (`pip install 'topos[torch]'`).
PEER_MODULES = {"torch": "torch", "torch-compile": "torch", "jax": "jax"}

#: The routes every PyTorch workload (`topos.native.TorchWorkload`) offers, beside the
#: family `compile-budget-<fraction>` and the routes of the workload's own; `eager` is
#: their reference. A native workload's routes are checked against the workload itself,
#: in the preflight's answer, not against `GRADE_ROUTES`.
TORCH_NATIVE_ROUTES = (
    "eager",
    "checkpoint",
    "checkpoint-unpreserved-rng",
    "selective",
    "compile",
)

#: The prefix of the routes that compile under an activation memory budget.
COMPILE_BUDGET_PREFIX = "compile-budget-"

#: The routes every JAX workload (`topos.native.JaxWorkload`) offers, each jitted,
#: beside the family `checkpoint-names:<a+b>` and the routes of the workload's own;
#: `jit` (no checkpoint) is their reference.
JAX_NATIVE_ROUTES = (
    "jit",
    "checkpoint-nothing-saveable",
    "checkpoint-dots-saveable",
)

#: The prefix of the JAX routes that save only the values the loss named with
#: `jax.ad_checkpoint.checkpoint_name`: `checkpoint-names:attention+hidden` (`+`
#: between the names, as the comma separates routes in `--routes`).
CHECKPOINT_NAMES_PREFIX = "checkpoint-names:"

#: What a route name of one's own may look like: a word, hyphens and dots within (and a
#: family's argument after a colon, as in `checkpoint-names:attention+hidden`).
ROUTE_NAME = re.compile(r"[A-Za-z][\w.-]*(:[\w.+-]+)?")

#: Every route `topos grade --routes` accepts.
GRADE_ROUTES = ROUTES + PEER_ROUTES

#: What `topos grade` grades unless `--routes` says otherwise: remat runs on request, as
#: its budget is a choice.
DEFAULT_ROUTES = ("engine", "recorded")

#: The workloads topos ships (`topos.workloads.<name>`, a hyphen an underscore there).
#: `cifar10` and `gpt` run their second shard in a forked process where that can run
#: (Linux): `cifar10-threads` and `gpt-threads` keep it on a thread, `cifar10-processes`
#: asks for a process whatever the platform; `llama` (a Llama-style transformer on
#: `gpt`'s text) runs its shards as `gpt` does. `cifar10-winograd` computes `cifar10`'s
#: second and third convolutions by Winograd's F(4x4, 3x3).
BUILT_IN_WORKLOADS = (
    "cifar10",
    "mnist",
    "gpt",
    "llama",
    "cifar10-threads",
    "gpt-threads",
    "cifar10-processes",
    "cifar10-winograd",
)

#: The entry-point group under which packages register workloads of their own.
ENTRY_POINT_GROUP = "topos.workloads"

#: A module's dotted name: identifiers joined by dots.
DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


#: What a workload's file is asked for when its name gives no attribute: `examples/
#: torch_transformer.py` means `examples/torch_transformer.py:workload`.
DEFAULT_WORKLOAD_ATTRIBUTE = "workload"


def workload_file_of(name: str) -> tuple[str, str] | None:
    """For a workload named by its file, `path/to/file.py` or `path/to/file.py:attribute`,
    the path as given and the attribute (`workload` when none is named); `None` for any
    other name (built in, an entry point, `package.module:attribute`)."""
    if name.endswith(".py"):
        return name, DEFAULT_WORKLOAD_ATTRIBUTE
    path, colon, attribute = name.rpartition(":")
    # Only the last colon parts a path from its attribute: a directory may hold one.
    if colon and path.endswith(".py"):
        return path, attribute
    return None


class UnknownNameError(ValueError):
    """A route or workload name that names nothing; the message says why in one line."""


def is_peer(route: str) -> bool:
    """Whether `route` is run by a peer framework rather than by topos."""
    return route in PEER_ROUTES


def check_route(name: str) -> str:
    """`name` if it is a route (topos's or a peer's), else UnknownNameError naming it and
    the routes."""
    if name not in GRADE_ROUTES:
        raise UnknownNameError(f"unknown route {name!r}; routes are {', '.join(GRADE_ROUTES)}")
    return name


def missing_peer(route: str) -> str | None:
    """For a peer route whose framework is not installed, one line saying which extra
    installs it; else None. The module is looked for, not imported."""
    if not is_peer(route):
        return None
    from importlib.util import find_spec

    module = PEER_MODULES[route]
    if find_spec(module) is None:
        return (
            f"route {route!r} needs {module}, which is not installed: pip install 'topos[{module}]'"
        )
    if route == "torch-compile":
        return missing_compiler()
    return None


def compile_budget_of(route: str) -> float | None:
    """The budget of a `compile-budget-<fraction>` route (a number from 0 to 1), else None."""
    if not route.startswith(COMPILE_BUDGET_PREFIX):
        return None
    try:
        fraction = float(route.removeprefix(COMPILE_BUDGET_PREFIX))
    except ValueError:
        return None
    return fraction if 0.0 <= fraction <= 1.0 else None


def checkpoint_names_of(route: str) -> tuple[str, ...] | None:
    """The names a `checkpoint-names:<a+b>` route saves (identifiers, `+` between them),
    else None."""
    if not route.startswith(CHECKPOINT_NAMES_PREFIX):
        return None
    names = tuple(route.removeprefix(CHECKPOINT_NAMES_PREFIX).split("+"))
    return names if all(name.isidentifier() for name in names) else None


def compiles(route: str) -> bool:
    """Whether native route `route` compiles (and needs a C++ compiler on the CPU)."""
    return route == "compile" or compile_budget_of(route) is not None


def unknown_native_route(route: str, framework: str, offered: list[str]) -> str | None:
    """One line when a native workload of `framework` (its routes `offered`) has no route
    `route`, neither by name nor in its framework's family of routes; else None."""
    if route in offered:
        return None
    if framework == "torch":
        if compile_budget_of(route) is not None:
            return None
        if route.startswith(COMPILE_BUDGET_PREFIX):
            return (
                f"route {route!r}: the budget must be a number from 0 to 1, e.g. compile-budget-0.5"
            )
        family = "compile-budget-<0 to 1>"
    else:
        if checkpoint_names_of(route) is not None:
            return None
        if route.startswith(CHECKPOINT_NAMES_PREFIX):
            return (
                f"route {route!r}: name the saved values as identifiers with + between "
                f"them, e.g. checkpoint-names:attention+hidden"
            )
        family = "checkpoint-names:<a+b>"
    return f"the workload has no route {route!r}; its routes are {', '.join(offered)}, or {family}"


def missing_native_route(route: str, framework: str, offered: list[str]) -> str | None:
    """For a native workload (its `framework`, the routes it `offered`), one line when it
    has no route `route`, its framework is not installed, or `route` compiles without a
    C++ compiler; else None. Looked for, never imported: the parent stays light."""
    from importlib.util import find_spec

    mistake = unknown_native_route(route, framework, offered)
    if mistake is not None:
        return mistake
    if find_spec(framework) is None:
        return (
            f"route {route!r} needs {framework}, which is not installed: "
            f"pip install 'topos[{framework}]'"
        )
    if framework == "torch" and compiles(route):
        return missing_compiler(route, "eager")
    return None


def missing_compiler(route: str = "torch-compile", instead: str = "torch") -> str | None:
    """For `torch-compile`, one line when the C++ compiler torch.compile builds its CPU
    code with (`$CXX`, else `g++`, `clang++` on macOS: the one its inductor looks for) is
    not on the PATH; else None. Said before any worker starts, where the compiled worker
    would otherwise fail at its first step."""
    import os
    import shutil
    import sys

    compiler = os.environ.get("CXX", "clang++" if sys.platform == "darwin" else "g++")
    if shutil.which(compiler) is not None:
        return None
    return (
        f"route {route!r} needs a C++ compiler for torch.compile's CPU code, and "
        f"{compiler!r} is not on the PATH: install one (or name it in $CXX), or use route "
        f"{instead!r}"
    )


def parse_routes(
    text: str, option: str = "--routes", twice: str = "use --repeat", open_names: bool = False
) -> tuple[str, ...]:
    """The routes of a comma-separated list such as `engine,recorded`, in its order;
    UnknownNameError (one line, naming the offender and `option`, the option that gave
    `text`) for an unknown, repeated or empty route. `twice` says what to do instead of
    naming a route twice (each command its own advice: grade's is `--repeat`). With
    `open_names` (a workload not built in, which may be native), a name of no topos route
    is kept for the workload to judge (`missing_native_route`, or `check_route` once the
    workload turns out to be topos's) if it looks like a route name."""
    names = [name.strip() for name in text.split(",")]
    if not any(names):
        raise UnknownNameError(f"{option} names no route; routes are {', '.join(GRADE_ROUTES)}")
    seen: list[str] = []
    for name in names:
        if not name:
            raise UnknownNameError(f"{option} {text!r} has an empty name between commas")
        if not (open_names and name not in GRADE_ROUTES and ROUTE_NAME.fullmatch(name)):
            check_route(name)
        if name in seen:
            raise UnknownNameError(f"route {name!r} is named twice in {option}; {twice}")
        seen.append(name)
    return tuple(seen)


def check_workload_name(name: str) -> None:
    """Raises UnknownNameError if `name` cannot possibly name a workload: neither built
    in, nor a registered entry point (read from package metadata, never imported), nor of
    the form `package.module:attribute`. Whether it loads is for `topos.workloads.resolve`
    to say."""
    if not name.strip():
        raise UnknownNameError("--workload names no workload")
    if name in BUILT_IN_WORKLOADS:
        return
    named_file = workload_file_of(name)
    if named_file is not None:
        _check_workload_file(name, *named_file)
        return
    if ":" in name:
        module, _, attribute = name.partition(":")
        if not DOTTED_NAME.fullmatch(module) or not attribute.isidentifier():
            raise UnknownNameError(
                f"--workload {name!r}: name a workload as package.module:attribute"
            )
        return
    # Package metadata is read only here: importing it costs every process that reads
    # these names (a worker among them) some 3 MiB.
    from importlib.metadata import entry_points

    if any(entry.name == name for entry in entry_points(group=ENTRY_POINT_GROUP)):
        return
    raise UnknownNameError(
        f"unknown workload {name!r}; built in: {', '.join(BUILT_IN_WORKLOADS)}; "
        f"or name one as package.module:attribute or path/to/file.py[:attribute]"
    )


def _check_workload_file(name: str, path: str, attribute: str) -> None:
    """Raises UnknownNameError if the workload file `path` is not there to be read, or
    `attribute` cannot name anything in it. Only looked at, never imported: what it
    holds is for `topos.workloads.resolve` to say, in a child of the grading parent."""
    if not attribute.isidentifier():
        raise UnknownNameError(
            f"--workload {name!r}: name a workload in a file as path/to/file.py:attribute"
        )
    if not os.path.exists(path):
        raise UnknownNameError(f"--workload {name!r}: no such file {path}")
    if not os.path.isfile(path):
        raise UnknownNameError(f"--workload {name!r}: {path} is not a file")
