"""The report as a person sees it: drawn by a real headless browser (Chromium, from the
Debian packages), its screenshot holding every route's colour and nothing cut off at the
right edge. Skipped, with the reason, where no Chromium is installed."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from tests.cli.result_examples import example_result
from topos_cli.render.plotting import ROUTE_COLOURS
from topos_cli.render.report_html import write_report

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


def sampled_pixels(image, step=2):
    """Every `step`-th pixel of `image` each way, as an `[n, 3]` integer array."""
    return np.asarray(image, dtype=np.int32)[::step, ::step].reshape(-1, 3)


def count_near(pixels, colour, tolerance=40):
    """How many `pixels` lie within `tolerance` (summed over red, green, blue) of the
    `#rrggbb` `colour`; counted with NumPy, as a page's million pixels are too many to
    visit one by one in Python."""
    wanted = np.array([int(colour[index : index + 2], 16) for index in (1, 3, 5)])
    return int(np.count_nonzero(np.abs(pixels - wanted).sum(axis=1) <= tolerance))


def count_not_white(pixels):
    """How many `pixels` are not the page's white background."""
    return int(np.count_nonzero((pixels != 255).any(axis=1)))


def test_chromium_draws_every_route_and_cuts_nothing_off(tmp_path):
    result = tmp_path / "result.json"
    result.write_text(json.dumps(example_result(repeats=2)))
    (page,), _ = write_report(result)
    image = screenshot(page, tmp_path)
    sample = sampled_pixels(image)
    for route in ("engine", "recorded"):
        drawn = count_near(sample, ROUTE_COLOURS[route])
        assert drawn > 500, f"{route} is hardly drawn ({drawn} pixels of its colour)"
    # The page fits the window: the last columns hold nothing but the background.
    edge = np.asarray(image)[::3, -12:].reshape(-1, 3)
    assert count_not_white(edge) == 0
