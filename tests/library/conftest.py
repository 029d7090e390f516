"""Each test of the library leaves the primitives as it found them: what a test (or a
user's module it loads) registers is unregistered after it, so the project's
every-primitive tests never see a user's primitive."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import pytest

from topos.ops import REGISTRY

HERE = Path(__file__).parent
_loads = itertools.count()


@pytest.fixture(autouse=True)
def registry_restored():
    """Restores the registry after the test: removed and replaced entries come back."""
    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)


def load_user_module(path: Path = HERE / "softsign_module.py"):
    """Imports a user's module from its file, afresh (as re-running a notebook cell
    does), under a name of its own."""
    name = f"user_module_{next(_loads)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def user_module():
    """The user's module of softsign and rounded, registered for this test."""
    return load_user_module()
