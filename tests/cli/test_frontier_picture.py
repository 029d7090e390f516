"""The frontier picture: labels beside their points and never over one another or any
other text, every point with its interval, points within noise hollow; a frontier's page
titled so."""

from __future__ import annotations

import pytest

from topos_cli.report.display.frontier_picture import (
    CHARACTER_WIDTH,
    HEIGHT,
    LABEL_HEIGHT,
    WIDTH,
    FrontierPoint,
    frontier_points_of,
    frontier_svg,
    indistinct,
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


def svg_text_boxes(svg: str) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Every text of the picture with its box (left, top, right, bottom) in pixels, its
    width measured in DejaVu Sans (wider than most sans-serif fonts a browser picks)."""
    import xml.etree.ElementTree as ElementTree

    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    measure = TextToPath()
    root = ElementTree.fromstring(svg)
    boxes = []
    for element in root.iter("{http://www.w3.org/2000/svg}text"):
        size = float(element.get("font-size", root.get("font-size")))
        text = element.text or ""
        width, _, _ = measure.get_text_width_height_descent(
            text, FontProperties(family="DejaVu Sans", size=size), ismath=False
        )
        x, y = float(element.get("x")), float(element.get("y"))
        anchor = element.get("text-anchor", "start")
        left = x - {"start": 0, "middle": width / 2, "end": width}[anchor]
        box = (left, y - 0.8 * size, left + width, y + 0.2 * size)
        if "rotate(-90" in (element.get("transform") or ""):
            # Turned a quarter about (x, y): the box turns with it.
            box = (x - 0.8 * size, y - (x - box[0]), x + 0.2 * size, y + (box[2] - x))
        boxes.append((text, box))
    return boxes


def frontier_verdict(count: int):
    from tests.cli.result_examples import example_result, some_routes
    from topos_cli.report.verdict import decide_verdict

    return decide_verdict(example_result(repeats=1, routes=some_routes(count))["repeats"])


@pytest.mark.parametrize("count", range(1, 9))
def test_the_picture_of_one_to_eight_points_has_no_overlapping_text(count):
    svg = frontier_svg(frontier_points_of(frontier_verdict(count)), "cifar10: a frontier")
    boxes = svg_text_boxes(svg)
    for text, (left, top, right, bottom) in boxes:
        assert left >= 0 and right <= WIDTH and top >= 0 and bottom <= HEIGHT, text
    for index, (text, box) in enumerate(boxes):
        for other, other_box in boxes[index + 1 :]:
            apart = (
                box[2] <= other_box[0]
                or other_box[2] <= box[0]
                or box[3] <= other_box[1]
                or other_box[3] <= box[1]
            )
            assert apart, (text, other)


def test_every_point_has_its_interval_and_points_within_noise_are_hollow():
    points = [
        FrontierPoint("engine", "engine", 20.0, 54.0, 19.0, 21.0),
        FrontierPoint("recorded", "recorded", 18.0, 27.0, 17.5, 18.5),
        FrontierPoint("remat@50%", "remat", 18.2, 17.0, 17.9, 18.6),
    ]
    assert indistinct(points) == [False, True, True]
    svg = frontier_svg(points, "t")
    assert svg.count('stroke-width="1.2" fill="none"') == 3  # an error bar per point
    assert svg.count('fill="white" stroke="#59a14f"') == 1  # recorded hollow
    assert svg.count('fill="white" stroke="#e15759"') == 1  # remat@50% hollow
    assert 'fill="#4e79a7" stroke="#4e79a7"' in svg  # engine filled: told apart
    assert "within noise of another point" in svg and "bars:" in svg


def test_a_frontier_page_is_titled_topos_frontier():
    from tests.cli.result_examples import example_result
    from topos_cli.report.display.report_contents import gather_report_contents
    from topos_cli.report.display.report_html import render_report_html
    from topos_cli.result.lenient_result import interpret_result

    result = example_result()
    result["frontier"] = {"budgets": ["50%"], "points": ["engine", "recorded"], "refused": []}
    contents = gather_report_contents(interpret_result(result, "t"))
    svgs = {"memory": "", "steps": "", "loss": ""}
    assert "<h1>topos frontier: cifar10</h1>" in render_report_html(contents, svgs)
    del result["frontier"]
    contents = gather_report_contents(interpret_result(result, "t"))
    assert "<h1>topos grade: cifar10</h1>" in render_report_html(contents, svgs)
