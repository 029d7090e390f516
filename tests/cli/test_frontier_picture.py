"""The frontier picture's labels: beside their points, and never over one another."""

from __future__ import annotations

from topos_cli.report.display.frontier_picture import (
    CHARACTER_WIDTH,
    LABEL_HEIGHT,
    label_positions,
)


def _boxes(centres, labels):
    return [
        (left, left + CHARACTER_WIDTH * len(label), baseline - LABEL_HEIGHT, baseline)
        for (left, baseline), label in zip(label_positions(centres, labels), labels, strict=True)
    ]


def test_a_label_sits_up_and_to_the_right_of_its_point():
    assert label_positions([(100.0, 200.0)], ["recorded"]) == [(108.0, 192.0)]


def test_labels_of_points_close_together_do_not_overlap():
    # remat at 50% and at its floor, a pixel or two apart, and a third point far away.
    centres = [(236.2, 100.3), (235.3, 95.7), (600.0, 300.0), (236.0, 98.0)]
    labels = ["remat@50%", "remat@floor", "engine", "remat@45%"]
    boxes = _boxes(centres, labels)
    for index, (left, right, top, bottom) in enumerate(boxes):
        for other_left, other_right, other_top, other_bottom in boxes[index + 1 :]:
            assert (
                right <= other_left
                or other_right <= left
                or bottom <= other_top
                or (other_bottom <= top)
            )
    # The far point keeps its place.
    assert label_positions(centres, labels)[2] == (608.0, 292.0)
