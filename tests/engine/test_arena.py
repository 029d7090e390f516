"""The arena's placement: no two buffers live at a common step share a byte, no
placement beats the most bytes live at one step, the search reaches that bound
where the plain orders miss it, and a search kept for several targets places as the
plain reference written from the specification alone
(tests/support/placement_reference.py) does for each."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.placement_reference import reference_place
from topos.engine import arena
from topos.engine.arena import ALIGNMENT, Interval, PlacementSearch, aligned, lower_bound, place


@st.composite
def interval_sets(draw) -> list[Interval]:
    count = draw(st.integers(1, 24))
    intervals = []
    for key in range(count):
        start = draw(st.integers(0, 12))
        end = draw(st.integers(start, 14))
        intervals.append(Interval(key, start, end, draw(st.integers(1, 5000))))
    return intervals


def _most_live(intervals: list[Interval]) -> int:
    steps = {step for interval in intervals for step in range(interval.start, interval.end + 1)}
    return max(
        sum(aligned(i.size) for i in intervals if i.start <= step <= i.end) for step in steps
    )


@settings(max_examples=200, deadline=None)
@given(interval_sets())
def test_placement_keeps_live_buffers_apart_within_the_arena(intervals):
    offsets, size = place(intervals)
    for interval in intervals:
        offset = offsets[interval.key]
        assert offset % ALIGNMENT == 0
        assert offset + interval.size <= size
    for first in intervals:
        for second in intervals:
            if first.key >= second.key:
                continue
            if first.start <= second.end and second.start <= first.end:
                low, high = offsets[first.key], offsets[first.key] + first.size
                other_low = offsets[second.key]
                assert high <= other_low or other_low + second.size <= low
    assert lower_bound(intervals) == _most_live(intervals) <= size
    assert place(intervals) == (offsets, size)


#: Every plain order places these four at 768 bytes; 640 are live at step 2.
MISSED_BY_THE_ORDERS = [
    Interval("a", 6, 7, 384),
    Interval("b", 2, 3, 192),
    Interval("c", 1, 6, 192),
    Interval("d", 0, 5, 256),
]


def test_the_search_reaches_the_bound_the_plain_orders_miss(monkeypatch):
    intervals = MISSED_BY_THE_ORDERS
    assert lower_bound(intervals) == 640
    assert place(intervals)[1] == 640
    with monkeypatch.context() as patched:
        patched.setattr(arena, "_SEARCH_TRIES", 0)
        assert place(intervals)[1] == 768


def test_a_target_above_the_bound_ends_the_search_early():
    intervals = MISSED_BY_THE_ORDERS
    # A target the plain orders already meet needs no search; one below the bound
    # cannot be met, so none is made either.
    assert place(intervals, target=768)[1] == 768
    assert place(intervals, target=600)[1] == 768


@settings(max_examples=200, deadline=None)
@given(interval_sets(), st.lists(st.none() | st.integers(0, 60000), min_size=1, max_size=4))
def test_a_kept_search_places_as_the_reference_for_every_target(intervals, targets):
    search = PlacementSearch(intervals)
    for target in targets:
        expected = reference_place(intervals, target=target)
        assert search.placement(target) == expected
        assert place(intervals, target=target) == expected


def test_a_kept_search_replays_its_trail_for_a_target_it_passed():
    intervals = MISSED_BY_THE_ORDERS
    search = PlacementSearch(intervals)
    # The bound first (the search runs until it finds it), then a target the plain
    # orders meet, then none: each is the reference's.
    for target in (640, 768, None, 700):
        assert search.placement(target) == reference_place(intervals, target=target)


#: Four buffers the search places at the bound (768 bytes) only by way of orders that
#: place no better than the best before them: a search that kept strictly better
#: orders alone would give other offsets.
REACHED_THROUGH_EQUAL_ORDERS = [
    Interval("a", 0, 2, 128),
    Interval("b", 3, 7, 384),
    Interval("c", 2, 4, 320),
    Interval("d", 2, 2, 320),
]


def test_the_search_keeps_orders_that_place_no_worse():
    intervals = REACHED_THROUGH_EQUAL_ORDERS
    expected = ({"a": 0, "b": 0, "c": 448, "d": 128}, 768)
    assert lower_bound(intervals) == 768
    assert reference_place(intervals) == expected
    assert place(intervals) == expected
    assert PlacementSearch(intervals).placement() == expected
