"""The frontier picture: labels beside their points and never over one another or any
other text, every point with its interval, points within noise hollow, a cross at each
point's predicted Δ beside its measured one, a key naming each point's budget, planned
bytes and recomputations; a frontier's page titled so."""

from __future__ import annotations

import pytest

from topos_cli.render.frontier_picture import (
    HEIGHT,
    WIDTH,
    FrontierPoint,
    frontier_points_of,
    frontier_svg,
    indistinct,
)
from topos_cli.render.label_placement import LABEL_HEIGHT, label_positions, label_width


def _boxes(centres, labels):
    return [
        (left, left + label_width(label), baseline - LABEL_HEIGHT, baseline)
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
    from topos_cli.judge.verdict import decide_verdict

    return decide_verdict(example_result(repeats=1, routes=some_routes(count))["repeats"])


def frontier_result(routes: dict[str, tuple[float, int, int, int]]):
    """A frontier's result (`GradeResult`) and verdict over `routes` (as `example_result`
    takes them, the last figure the predicted Δ in MiB), every worker's facts as a
    frontier's give them: a remat point's budget (its label's share of 40 MiB, or the
    floor's 12), planned bytes a MiB under it and recomputations; recorded's and engine's
    planned bytes."""
    from tests.cli.result_examples import MEBIBYTE, example_result
    from topos_cli.render.report_contents import gather_report_contents
    from topos_cli.result.lenient_result import interpret_result

    data = example_result(repeats=1, routes=routes)
    for index, (route, (_, _, delta, _)) in enumerate(routes.items()):
        facts = data["routes"][route]
        facts["live_volume"] = {"plan_training_bytes": (delta - 2) * MEBIBYTE}
        if not route.startswith("remat"):
            continue
        share = route.partition("@")[2].removesuffix("%")
        fraction = int(share) / 100 if share.isdigit() else 0.3
        budget = int(40 * MEBIBYTE * fraction)
        facts["remat"] = {
            "budget_bytes": budget,
            "planned_bytes": budget - MEBIBYTE,
            "floor_bytes": None,
            "unconstrained_bytes": 40 * MEBIBYTE,
            "budget_fraction": fraction,
            "recomputations": 10 * index,
            "extra_flops_fraction": index / 100,
        }
    contents = gather_report_contents(interpret_result(data, "t"))
    return contents.result, contents.verdict


def svg_height(svg: str) -> float:
    """The picture's height, as its root says it."""
    import xml.etree.ElementTree as ElementTree

    return float(ElementTree.fromstring(svg).get("height"))


@pytest.mark.parametrize("count", range(1, 9))
def test_the_picture_of_one_to_eight_points_has_no_overlapping_text(count):
    from tests.cli.result_examples import some_routes

    result, verdict = frontier_result(some_routes(count))
    svg = frontier_svg(frontier_points_of(verdict, result), "cifar10: a frontier")
    # Each point's crosses and key line drawn, within the picture's grown height.
    assert svg.count('class="predicted"') == count
    height = svg_height(svg)
    assert height == HEIGHT + 15 * count + 8
    boxes = svg_text_boxes(svg)
    for text, (left, top, right, bottom) in boxes:
        assert left >= 0 and right <= WIDTH and top >= 0 and bottom <= height, text
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
    assert "not told apart from some point" in svg and "bars:" in svg


def test_a_frontier_page_is_titled_topos_frontier():
    from tests.cli.result_examples import example_result
    from topos_cli.render.report_contents import gather_report_contents
    from topos_cli.render.report_html import render_report_html
    from topos_cli.result.lenient_result import interpret_result

    result = example_result()
    result["frontier"] = {"budgets": ["50%"], "points": ["engine", "recorded"], "refused": []}
    contents = gather_report_contents(interpret_result(result, "t"))
    svgs = {"memory": "", "steps": "", "loss": ""}
    frontier_page = render_report_html(contents, svgs)
    assert "<h1>topos frontier: cifar10</h1>" in frontier_page
    # The report of a frontier draws the frontier: its picture and its table.
    assert '<figure id="frontier-figure"><svg' in frontier_page
    assert '<table id="frontier">' in frontier_page and "predicted Δ MiB" in frontier_page
    del result["frontier"]
    contents = gather_report_contents(interpret_result(result, "t"))
    grade_page = render_report_html(contents, svgs)
    assert "<h1>topos grade: cifar10</h1>" in grade_page
    assert "frontier-figure" not in grade_page


def _measured_labels(svg: str) -> tuple[list, list]:
    """The picture drawn by matplotlib: each point label's box as its renderer measures it
    (`Text.get_window_extent`, DejaVu Sans at the SVG's size, one pixel a point), and each
    point's mark as a box, both in the SVG's pixels (y down)."""
    import xml.etree.ElementTree as ElementTree

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    namespace = "{http://www.w3.org/2000/svg}"
    root = ElementTree.fromstring(svg)
    height = float(root.get("height"))
    figure = Figure(figsize=(WIDTH / 72, height / 72), dpi=72)
    renderer = FigureCanvasAgg(figure).get_renderer()
    marks = []
    for circle in root.iter(f"{namespace}circle"):
        x, y, radius = (float(circle.get(key)) for key in ("cx", "cy", "r"))
        if radius == 5:  # a point (the legend's marks are smaller)
            marks.append((x - radius, y - radius, x + radius, y + radius))
    labels = []
    for element in root.iter(f"{namespace}text"):
        if element.get("text-anchor") or element.get("font-size"):
            continue  # titles, ticks and the legend: only point labels start plainly
        x, y = float(element.get("x")), float(element.get("y"))
        text = figure.text(
            x / WIDTH,
            1 - y / height,
            element.text,
            family="DejaVu Sans",
            size=float(root.get("font-size")),
            va="baseline",
        )
        extent = text.get_window_extent(renderer)
        labels.append(
            (element.text, (extent.x0, height - extent.y1, extent.x1, height - extent.y0))
        )
    return labels, marks


def _overlap(first, second) -> bool:
    return (
        first[0] < second[2]
        and second[0] < first[2]
        and first[1] < second[3]
        and second[1] < first[3]
    )


#: Frontiers whose points crowd one another: gpt's budgets a few pixels apart (its
#: floor+75% label fell on floor+25%'s point), a column of equal memory, a diagonal.
CROWDED = {
    "gpt": [
        ("engine", 25.0, 30.0),
        ("recorded", 21.0, 14.0),
        ("remat@100%", 21.3, 14.1),
        ("remat@floor+75%", 21.5, 12.0),
        ("remat@floor+50%", 22.6, 11.4),
        ("remat@floor+25%", 22.2, 11.9),
        ("remat@floor", 26.0, 10.0),
    ],
    "column": [(f"remat@{share}%", 20.0 + share / 50, 10.0) for share in range(40, 101, 10)],
    "diagonal": [(f"remat@{n}", 20.0 + n * 0.4, 10.0 + n * 0.5) for n in range(8)],
}


@pytest.mark.parametrize("name", sorted(CROWDED))
def test_labels_cover_no_point_and_no_other_label(name):
    points = [
        FrontierPoint(label, label.split("@")[0], milliseconds, mebibytes)
        for label, milliseconds, mebibytes in CROWDED[name]
    ]
    labels, marks = _measured_labels(frontier_svg(points, "t"))
    assert len(labels) == len(marks) == len(points)
    for text, box in labels:
        for mark in marks:
            assert not _overlap(box, mark), (text, box, mark)
    for index, (text, box) in enumerate(labels):
        for other, other_box in labels[index + 1 :]:
            assert not _overlap(box, other_box), (text, other)


def test_a_point_is_filled_only_where_the_verdict_claims_a_difference():
    from tests.cli.result_examples import example_result
    from topos_cli.judge.verdict import decide_verdict

    routes = {"engine": (40.0, 80, 50, 40), "recorded": (20.0, 70, 25, 20)}
    # One repeat each: the steps' quartiles lie far apart, but one repeat is too thin a
    # judgement, so the verdict calls the pair inconclusive and neither point is filled.
    verdict = decide_verdict(example_result(repeats=1, routes=routes)["repeats"])
    assert verdict.routes[1].speed.ratio.direction == "inconclusive"
    points = frontier_points_of(verdict)
    assert [point.told_apart for point in points] == [False, False]
    assert indistinct(points) == [True, True]
    # Three repeats a point, twice as fast: a claim, and both filled.
    verdict = decide_verdict(example_result(repeats=3, routes=routes)["repeats"])
    assert verdict.routes[1].speed.ratio.direction == "faster"
    assert [point.told_apart for point in frontier_points_of(verdict)] == [True, True]
    # A third point within tolerance of recorded: recorded and it hollow, engine filled.
    routes["remat@50%"] = (20.1, 70, 15, 10)
    verdict = decide_verdict(example_result(repeats=3, routes=routes)["repeats"])
    (pairing,) = verdict.pairings
    assert pairing.speed.direction not in ("faster", "slower")
    assert [point.told_apart for point in frontier_points_of(verdict)] == [True, False, False]


def _crosses(svg: str) -> list[tuple[float, float]]:
    """The centre of every predicted point's cross (`class="predicted"`), in pixels."""
    import re
    import xml.etree.ElementTree as ElementTree

    centres = []
    for path in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}path"):
        if path.get("class") != "predicted":
            continue
        figures = [float(figure) for figure in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
        xs, ys = figures[0::2], figures[1::2]
        centres.append(((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2))
    return centres


#: Points whose predictions lie either side of their measured Δ, one exactly on it.
PREDICTED = {
    "engine": (20.0, 200, 54, 50),
    "recorded": (18.0, 200, 27, 29),
    "remat@50%": (19.0, 200, 17, 16),
    "remat@floor": (24.0, 200, 12, 12),
}


def test_each_point_has_a_cross_at_its_predicted_delta_beside_its_measured_one():
    from topos_cli.render.frontier_picture import CROSS_REACH, LEFT

    result, verdict = frontier_result(PREDICTED)
    points = frontier_points_of(verdict, result)
    assert [point.predicted_mebibytes for point in points] == [50, 29, 16, 12]
    svg = frontier_svg(points, "t")
    crosses = _crosses(svg)
    labels, marks = _measured_labels(svg)
    assert len(crosses) == len(marks) == len(PREDICTED)
    for (x, y), mark, (_, _, measured, predicted) in zip(
        crosses, marks, PREDICTED.values(), strict=True
    ):
        centre_x, centre_y = (mark[0] + mark[2]) / 2, (mark[1] + mark[3]) / 2
        assert y == pytest.approx(centre_y, abs=0.1)  # at its point's ms/step
        # The Δ axis starts at 0 on its left edge: the cross lies as far along it as the
        # prediction is of the measured Δ.
        assert (x - LEFT) / (centre_x - LEFT) == pytest.approx(predicted / measured, abs=0.005)
    # No label covers a cross.
    for text, box in labels:
        for x, y in crosses:
            cross = (x - CROSS_REACH, y - CROSS_REACH, x + CROSS_REACH, y + CROSS_REACH)
            assert not _overlap(box, cross), (text, box, cross)


def test_without_predictions_no_cross_is_drawn():
    points = [FrontierPoint("engine", "engine", 20.0, 54.0, 19.0, 21.0)]
    assert _crosses(frontier_svg(points, "t")) == []
    assert svg_height(frontier_svg(points, "t")) == HEIGHT


def test_the_key_names_each_points_budget_planned_bytes_and_recomputations():
    result, verdict = frontier_result(PREDICTED)
    texts = [
        text for text, _ in svg_text_boxes(frontier_svg(frontier_points_of(verdict, result), "t"))
    ]
    assert "engine: no budget, planned 52.00 MiB, nothing recomputed" in texts
    assert "remat@50%: budget 20.00 MiB (50%), planned 19.00 MiB, 20 recomputed (+2.0% FLOPs)" in (
        texts
    )
    assert (
        "remat@floor: budget 12.00 MiB (30%), planned 11.00 MiB, 30 recomputed (+3.0% FLOPs)"
        in (texts)
    )


def test_the_key_speaks_in_kib_below_a_mebibyte():
    # A GRU of one's own plans 140 KiB: '0.14 MiB' would hide what its budgets change.
    from topos_cli.render.frontier_picture import point_facts
    from topos_cli.result.grade_result import RouteFacts
    from topos_cli.result.worker_facts import RematFacts

    remat = RematFacts(
        budget_bytes=100_352,
        planned_bytes=93_184,
        floor_bytes=None,
        unconstrained_bytes=143_360,
        budget_fraction=0.7,
        recomputations=142,
        extra_flops_fraction=0.131,
    )
    assert point_facts(RouteFacts(remat=remat)) == (
        "budget 98.0 KiB (70%), planned 91.0 KiB, 142 recomputed (+13.1% FLOPs)"
    )
