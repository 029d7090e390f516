"""Discovery: every module of a package imported, so a primitive registers by existing.

A primitive registers itself when its module is imported (`@primitive` adds it to the
registry). Importing every module the package's folder holds, rather than a list kept by
hand, is what lets a new primitive live in one file: dropping
`topos/ops/primitives/new.py` in is the whole of registering it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence


def import_modules(package: str, path: Sequence[str]) -> list[str]:
    """Imports every module directly inside the package called `package` whose folders are
    `path` (a package's `__name__` and `__path__`), in name order so registration order
    does not depend on the file system; answers their full names."""
    names = sorted(info.name for info in pkgutil.iter_modules(list(path)) if not info.ispkg)
    imported = []
    for name in names:
        module = importlib.import_module(f"{package}.{name}")
        imported.append(module.__name__)
    return imported
