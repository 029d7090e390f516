"""The public names, listed once (the `if TYPE_CHECKING:` imports of topos/__init__.py):
each resolves from `topos` to the object its module defines, none is listed twice, and
`__all__` is that list."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import topos


def listed_names() -> list[str]:
    """The names the facade's import block lists, as often as it lists them."""
    tree = ast.parse(Path(topos.__file__).read_text())
    (block,) = [node for node in tree.body if isinstance(node, ast.If)]
    return [alias.name for statement in block.body for alias in statement.names]


def test_every_public_name_is_listed_once():
    listed = listed_names()
    assert len(listed) == len(set(listed)) == len(topos._exports())
    assert sorted(topos.__all__) == sorted([*listed, "__version__"])


def test_every_public_name_is_its_modules_object():
    for name, module in topos._exports().items():
        assert getattr(topos, name) is getattr(importlib.import_module(module), name), name


def test_importing_topos_loads_none_of_them():
    # The names load on first use: `import topos` alone stays NumPy-free.
    screen = "import sys, topos; assert 'numpy' not in sys.modules; from topos import *"
    completed = subprocess.run([sys.executable, "-c", screen], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
