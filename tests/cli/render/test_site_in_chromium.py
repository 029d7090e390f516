"""The site `topos history --site` writes, as a person sees it: every page drawn by a real
headless browser (Chromium, from the Debian packages: `apt-get update && apt-get install
-y chromium`), every figure on it drawn in its routes' colours. Skipped, with the
reason, where no Chromium is installed.

The pages are drawn by one Chromium, each in a frame of its own on one sheet (a browsing
context per page, at the window size a lone screenshot of it takes): a Chromium started
per page cost the suite some 40 s for ten pages, most of it Chromium's start. A frame
draws its page as the window does (a frame's pixels and a lone screenshot's were seen
equal but for 62 of 3.1 million, in a line of text's anti-aliasing)."""

from __future__ import annotations

import html

import numpy as np
import pytest

from tests.cli.render.test_report_in_chromium import (
    CHROMIUM,
    count_near,
    count_not_white,
    sampled_pixels,
    screenshot,
)
from topos_cli.render.plotting import ROUTE_COLOURS

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium) to render the site"
)

#: A page's frame on the sheet, as the window of a lone screenshot of it would be.
WIDTH, HEIGHT = 1300, 2400

#: Frames a row of the sheet: two keep ten pages' sheet (2600 x 12000) within the size
#: Chromium draws a screenshot of.
COLUMNS = 2


def screenshots(pages, folder):
    """Each of `pages` as one Chromium draws it in a frame of `WIDTH` x `HEIGHT`, all on
    one sheet: an image per page, in the order given."""
    folder.mkdir()
    rows = -(-len(pages) // COLUMNS)
    frames = "".join(
        f'<iframe src="{html.escape(page.as_uri())}" style="position:absolute;'
        f"left:{(number % COLUMNS) * WIDTH}px;top:{(number // COLUMNS) * HEIGHT}px;"
        f'width:{WIDTH}px;height:{HEIGHT}px;border:0"></iframe>'
        for number, page in enumerate(pages)
    )
    sheet = folder / "sheet.html"
    sheet.write_text(f'<!doctype html><html><body style="margin:0">{frames}</body></html>')
    image = np.asarray(screenshot(sheet, folder, width=COLUMNS * WIDTH, height=rows * HEIGHT))
    return [
        image[top : top + HEIGHT, left : left + WIDTH]
        for number in range(len(pages))
        for top, left in [((number // COLUMNS) * HEIGHT, (number % COLUMNS) * WIDTH)]
    ]


def test_chromium_draws_every_figure_of_every_page_of_the_site(tmp_path, machines_site):
    # The site as `topos history --site` wrote it (`tests/cli/render/conftest.py`).
    assert machines_site.completed.returncode == 0, machines_site.completed.stderr
    pages = sorted(machines_site.site.rglob("*.html"))
    assert len(pages) == 1 + 3 + 6
    for page, image in zip(pages, screenshots(pages, tmp_path / "drawn"), strict=True):
        sample = sampled_pixels(image)
        # Something is drawn: the page is not blank.
        assert count_not_white(sample) > 500, page
        if "<svg" not in page.read_text():
            continue  # the index: tables and links only
        for route in ("engine", "recorded"):
            drawn = count_near(sample, ROUTE_COLOURS[route])
            assert drawn > 100, f"{page}: {route} is hardly drawn ({drawn} pixels)"
