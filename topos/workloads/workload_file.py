"""A workload named by its file: `path/to/file.py` or `path/to/file.py:attribute`.

The file is imported as `python path/to/file.py` would run it: its directory goes first
on `sys.path` (so a module beside it imports as it does there), and it is imported under
its own name, the file's stem (`torch_transformer` for `examples/torch_transformer.py`),
registered in `sys.modules` as any imported module is (what `code_origin` reads, and
what pickling a function of the file needs). A relative path is read from the working
directory, which a worker shares with the command that started it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

#: What a character of a file's stem that cannot be in a module's name becomes.
_NOT_IN_A_NAME = re.compile(r"\W")


def module_name_of(path: str) -> str:
    """The name the file at `path` is imported under: its stem, made an identifier
    (`my-model.py` is `my_model`; no dot, so it is a top-level module)."""
    name = _NOT_IN_A_NAME.sub("_", Path(path).stem)
    return f"_{name}" if not name or name[0].isdigit() else name


def import_workload_file(path: str) -> ModuleType:
    """The module the file at `path` defines, imported once per process (imported again
    it is the same module). Raises `FileNotFoundError`, `IsADirectoryError`, or
    `NameError` when its name is taken by another module already imported (a
    `numpy.py` of one's own would replace NumPy); whatever its code raises, it raises."""
    file = Path(path).resolve()
    if not file.exists():
        raise FileNotFoundError(f"no such file {path}")
    if not file.is_file():
        raise IsADirectoryError(f"{path} is not a file")
    name = module_name_of(path)
    already = sys.modules.get(name)
    if already is not None:
        known = getattr(already, "__file__", None)
        if known is not None and Path(known).resolve() == file:
            return already
        raise NameError(
            f"its module name {name!r} is taken by {known or 'a module'} already imported: "
            f"rename the file"
        )
    specification = importlib.util.spec_from_file_location(name, file)
    if specification is None or specification.loader is None:
        raise ImportError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(specification)
    directory = str(file.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    # Registered before it runs, as an import does: a dataclass, a pickled function or a
    # module of its own imported back all look the module up by its name.
    sys.modules[name] = module
    try:
        specification.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
