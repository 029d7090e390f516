"""The report as a person sees it: drawn by a real headless browser (Chromium, from the
Debian packages), its screenshot holding every route's colour and nothing cut off at the
right edge. Skipped, with the reason, where no Chromium is installed."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.cli.result_examples import example_result
from topos_cli.report.display.plotting import ROUTE_COLOURS
from topos_cli.report.display.report_html import write_report

CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium) to render the page"
)


def screenshot(page, tmp_path, width=1300, height=3200):
    """Chromium's screenshot of `page`, with nothing fetched and no profile kept."""
    target = tmp_path / "screenshot.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={target}",
            f"--window-size={width},{height}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert target.exists(), "Chromium wrote no screenshot"
    from PIL import Image  # matplotlib's own dependency

    return Image.open(target).convert("RGB")


def near(pixel, colour, tolerance=40):
    red, green, blue = (int(colour[index : index + 2], 16) for index in (1, 3, 5))
    return abs(pixel[0] - red) + abs(pixel[1] - green) + abs(pixel[2] - blue) <= tolerance


def test_chromium_draws_every_route_and_cuts_nothing_off(tmp_path):
    result = tmp_path / "result.json"
    result.write_text(json.dumps(example_result(repeats=2)))
    (page,), _ = write_report(result)
    image = screenshot(page, tmp_path)
    width, height = image.size
    pixels = image.load()
    sample = [pixels[x, y] for x in range(0, width, 2) for y in range(0, height, 2)]
    for route in ("engine", "recorded"):
        drawn = sum(near(pixel, ROUTE_COLOURS[route]) for pixel in sample)
        assert drawn > 500, f"{route} is hardly drawn ({drawn} pixels of its colour)"
    # The page fits the window: the last columns hold nothing but the background.
    edge = [pixels[x, y] for x in range(width - 12, width) for y in range(0, height, 3)]
    assert all(pixel == (255, 255, 255) for pixel in edge)
