"""RssTimeline: bounded memory, peaks never lost."""

import pytest

from topos_cli.harness.rss_timeline import RssTimeline


def test_samples_land_in_their_slice_and_a_slice_keeps_its_peak():
    timeline = RssTimeline(start=100.0, interval=0.01, capacity=8)
    for moment, rss in [(100.000, 5), (100.004, 9), (100.012, 7), (100.035, 4)]:
        timeline.add(moment, rss)
    # Slice 2 was skipped by the sampler: it repeats the level before, it does not invent 0.
    assert timeline.points == [9, 7, 7, 4]
    assert timeline.peak == 9 and timeline.last == 4 and timeline.samples == 4


def test_a_long_run_coarsens_but_stays_bounded_and_keeps_the_peak():
    timeline = RssTimeline(start=0.0, interval=0.005, capacity=16)
    for index in range(10_000):
        timeline.add(index * 0.005, 1000 + (50_000 if index == 7_777 else index % 3))
    assert len(timeline.points) <= 16
    assert max(timeline.points) == 51_000 == timeline.peak
    assert timeline.resolution > 0.005
    described = timeline.facts()
    assert described.samples == 10_000 and described.sampled_peak_bytes == 51_000
    assert described.resolution_seconds * 16 >= 10_000 * 0.005


def test_capacity_must_be_even():
    with pytest.raises(ValueError):
        RssTimeline(0.0, 0.005, capacity=7)
