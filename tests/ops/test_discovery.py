"""Discovery: a module dropped into a package's folder is imported, and a primitive it
declares is registered, with no list anywhere edited."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import topos.ops
from topos.ops import REGISTRY

# A package laid out as topos/ops is: its __init__ imports its modules by discovery.
INIT = """
from topos.ops.discovery import import_modules

MODULES = import_modules(__name__, __path__)
"""

# A primitive module as a contributor would write it, in a file of its own.
NEW_PRIMITIVE = """
import numpy as np

from topos.ops.primitive import primitive
from topos.ops.shape_rules import same


def derive(algebra, inputs, output, gradient, needs):
    return (algebra.add(gradient, gradient),)


@primitive("discovered_double", 1, same, derive)
def double(operand, out=None):
    return np.add(operand, operand, out=out)
"""


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh package `discovered_ops` under tmp_path, importable; forgotten afterwards
    (its modules and any primitive they registered)."""
    folder = tmp_path / "discovered_ops"
    folder.mkdir()
    (folder / "__init__.py").write_text(INIT)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(REGISTRY)
    yield folder
    for name in set(REGISTRY) - before:
        del REGISTRY[name]
    for name in [name for name in sys.modules if name.split(".")[0] == "discovered_ops"]:
        del sys.modules[name]


def test_a_dropped_in_module_registers_its_primitive(package: Path):
    (package / "doubling.py").write_text(NEW_PRIMITIVE)
    (package / "helpers.py").write_text("MARK = 1\n")
    import discovered_ops

    assert discovered_ops.MODULES == ["discovered_ops.doubling", "discovered_ops.helpers"]
    assert REGISTRY["discovered_double"].name == "discovered_double"


def test_without_the_file_nothing_registers(package: Path):
    # The converse: the primitive above is registered by its file and by nothing else.
    import discovered_ops

    assert discovered_ops.MODULES == []
    assert "discovered_double" not in REGISTRY


def test_every_primitive_module_is_imported_and_the_folder_holds_primitives_alone():
    # topos.ops's primitives are found the same way: each file of primitives/, none left
    # out; and each of them registers a primitive (the framework lives beside the folder).
    folder = Path(topos.ops.__file__).parent / "primitives"
    stems = [path.stem for path in folder.glob("*.py") if path.stem != "__init__"]
    files = sorted(f"topos.ops.primitives.{stem}" for stem in stems)
    assert files == topos.ops.MODULES
    assert all(name in sys.modules for name in files)
    registered_by = {primitive.kernel.__module__ for primitive in REGISTRY.values()}
    assert set(files) <= registered_by, sorted(set(files) - registered_by)
