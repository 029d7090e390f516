"""The site `topos history --site` writes, as a person sees it: every page drawn by a real
headless browser (Chromium, from the Debian packages: `apt-get update && apt-get install
-y chromium`), every figure on it drawn in its routes' colours. Skipped, with the
reason, where no Chromium is installed."""

from __future__ import annotations

import pytest

from tests.cli.render.test_machines import write_artifacts
from tests.cli.render.test_report_in_chromium import (
    CHROMIUM,
    count_near,
    count_not_white,
    sampled_pixels,
    screenshot,
)
from topos_cli.judge.history import read_history
from topos_cli.render.history_site import write_site
from topos_cli.render.plotting import ROUTE_COLOURS

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium installed (apt-get install chromium) to render the site"
)


def test_chromium_draws_every_figure_of_every_page_of_the_site(tmp_path):
    history = read_history(write_artifacts(tmp_path / "artifacts"))
    site = tmp_path / "site"
    pages = [path for path in write_site(history, site) if path.suffix == ".html"]
    assert len(pages) == 1 + 3 + 6
    for number, page in enumerate(sorted(pages)):
        image = screenshot(page, tmp_path / f"page-{number}", height=2400)
        sample = sampled_pixels(image)
        # Something is drawn: the page is not blank.
        assert count_not_white(sample) > 500, page
        if "<svg" not in page.read_text():
            continue  # the index: tables and links only
        for route in ("engine", "recorded"):
            drawn = count_near(sample, ROUTE_COLOURS[route])
            assert drawn > 100, f"{page}: {route} is hardly drawn ({drawn} pixels)"
