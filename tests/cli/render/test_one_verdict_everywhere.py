"""Every rendering says what the one judged verdict says.

A grade's table, summary sentence, JSON, HTML report, overview PNG title and history
row are each drawn from the same `Verdict`; none may word the outcome its own way. The
report of a diverging peer once titled its loss panel "the curves coincide": this test
builds a verdict of each kind and reads every rendering for the kind's word, and for the
word that would contradict it.
"""

from __future__ import annotations

import json

import pytest

from tests.cli.result_examples import example_result
from topos_cli.judge.history import read_history
from topos_cli.render.grade_figures import overview_title
from topos_cli.render.history_table import render_history_markdown
from topos_cli.render.report_contents import gather_report_contents
from topos_cli.render.report_html import write_report
from topos_cli.render.verdict_table import render_verdict_markdown, render_verdict_plain
from topos_cli.result.lenient_result import read_result_leniently

STEPS = 30
FALLING = [2.3 - 0.01 * step for step in range(STEPS)]
PEER_ROUTES = {
    "engine": (20.0, 200, 54, 53),
    "recorded": (18.0, 200, 27, 26),
    "torch": (25.0, 600, 20, 20),
}


def _kinds():
    drifting = [loss * (1.0 + 1e-7 * step) for step, loss in enumerate(FALLING)]
    # Parted from step 0 (a wrong emission): judged without any float64 run.
    parted = [loss * 1.3 for loss in FALLING]
    return {
        # kind: (result, the word every rendering says, a word none may say, exit status)
        "bit-identical": (example_result(steps=STEPS), "bit-identical", "parts at", 0),
        "agreeing peer": (
            example_result(steps=STEPS, routes=PEER_ROUTES, losses={"torch": drifting}),
            "agrees",
            "diverges",
            0,
        ),
        "diverging peer": (
            example_result(steps=STEPS, routes=PEER_ROUTES, losses={"torch": parted}),
            "diverges",
            "the curves coincide",
            1,
        ),
        "inconclusive time": (example_result(steps=STEPS), "inconclusive", "faster than", 0),
        "judged slower": (
            example_result(steps=STEPS, repeats=3, ms_scale={"recorded": 1.6}),
            "slower",
            "faster",
            0,
        ),
        "failed side": (
            example_result(steps=STEPS, failed=True),
            "failed",
            "bit-identical over 30",
            1,
        ),
    }


KINDS = _kinds()


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_rendering_says_the_verdicts_word(tmp_path, kind):
    result, word, contradiction, exit_status = KINDS[kind]
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    contents = gather_report_contents(read_result_leniently(path))
    verdict = contents.verdict
    assert int(verdict.exit_status) == exit_status == result["exit_status"]
    (page,), _ = write_report(path)
    history = render_history_markdown(read_history([path]))
    renderings = {
        "summary": verdict.summary,
        "plain": render_verdict_plain(verdict),
        "markdown": render_verdict_markdown(verdict),
        "json": json.dumps(verdict.to_json()),  # the record the report reads
        "html": page.read_text(encoding="utf-8"),
        "png title": overview_title(contents),
        "history": history,
    }
    for name, text in renderings.items():
        assert word in text, f"{kind}: the {name} does not say {word!r}"
        if name != "json":  # the JSON keeps every route's facts, the words are the renderings'
            assert contradiction not in text, f"{kind}: the {name} says {contradiction!r}"
