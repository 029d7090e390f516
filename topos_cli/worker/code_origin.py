"""Which code a worker imported: the workload's module file and topos's, as `CodeFacts`.

Read after the workload is resolved, from the modules already imported: nothing is
imported for it. `topos grade --against` compares the two sides' facts, so a grade whose
two sides would run the same workload code and the same topos is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

from topos_cli.result.worker_facts import CodeFacts


def _file(module_name: str | None) -> str | None:
    """The resolved file of the imported module `module_name`, if it has one."""
    module = sys.modules.get(module_name or "")
    location = getattr(module, "__file__", None)
    return str(Path(location).resolve()) if location else None


def _root(module_name: str | None, file: str | None) -> str | None:
    """The directory the top-level package of `module_name` sits in: the entry of the
    path it was found on (`src/` for `src/pkg/mod.py` imported as `pkg.mod`)."""
    if module_name is None or file is None:
        return None
    path = Path(file)
    # A package's `__init__.py` is one level deeper than the package it names.
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    return str(path.parents[depth])


def code_facts(workload_name: str) -> CodeFacts:
    """The code this process imported for the workload called `workload_name` (resolved
    already) and the topos it runs."""
    import topos
    from topos.workloads.registry import module_of

    module = module_of(workload_name)
    file = _file(module)
    return CodeFacts(
        workload_module=module,
        workload_file=file,
        workload_root=_root(module, file),
        topos_file=_file("topos"),
        topos_version=getattr(topos, "__version__", None),
    )
