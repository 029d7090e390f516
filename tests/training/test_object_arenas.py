"""carve_object_arenas: before ready every pool of the small-object allocator's arenas is
carved (written) and free again, so the steps' Python objects land in resident pages."""

from __future__ import annotations

import sys

import pytest

from topos.training import object_arenas
from topos.training.object_arenas import carve_object_arenas

pytestmark = pytest.mark.skipif(
    not hasattr(sys, "_debugmallocstats"), reason="CPython's allocator statistics"
)


def test_after_carving_no_earlier_arena_has_a_pool_left_uncarved():
    # Leave the newest arena partly carved: many small objects, half of them freed.
    objects = [bytes(100) for _ in range(20000)]
    del objects[::2]
    before = object_arenas._statistics()
    free = carve_object_arenas()
    after = object_arenas._statistics()
    assert free == before.unused_pools * before.pool_bytes
    # The blocks taken needed a new arena: every earlier one was in use to its last pool.
    assert after.arenas_made > before.arenas_made
    del objects


def test_without_statistics_nothing_is_carved(monkeypatch):
    monkeypatch.delattr(sys, "_debugmallocstats")
    assert carve_object_arenas() == 0


def test_unreadable_statistics_carve_nothing(monkeypatch):
    monkeypatch.setattr(sys, "_debugmallocstats", lambda: None)
    assert carve_object_arenas() == 0
