"""The report's loss panel and overview title say what the verdict says about the bits.

A grade whose peer diverged used to title its loss panel "bit-identical over 30 steps,
the curves coincide", and the overview PNG's title, the verdict's long sentence cut
after three lines, stopped at "losses bit- …". Both now start from the judged parity
and each peer's judged agreement cell.
"""

from __future__ import annotations

from types import SimpleNamespace

from topos_cli.judge.verdict import decide_verdict
from topos_cli.render.grade_figures import overview_title
from topos_cli.render.loss_figure import loss_title
from topos_cli.result.float_bits import float32_bits
from topos_cli.result.repeat import Repeat

STEPS = 30


def _run(route: str, losses: list[float], facts: dict | None = None) -> Repeat:
    bits = tuple(float32_bits(loss) for loss in losses)
    return Repeat(route, 0, "ok", bits, tuple(0.01 for _ in bits), facts=facts or {})


def _contents(peer_losses: list[float] | None, routes: int = 2):
    losses = [2.3 - 0.05 * step for step in range(STEPS)]
    runs = [_run(route, losses) for route in ("engine", "recorded", "remat")[:routes]]
    if peer_losses is not None:
        # The peer's float64 run follows its float32 one: what parts from topos is its
        # program, not float32's drift (`agreement`).
        float64 = {"topos_losses": losses, "peer_losses": peer_losses}
        facts = {"ready": {"peer": {"framework": "torch", "float64": float64}}}
        runs.append(_run("torch", peer_losses, facts))
    verdict = decide_verdict(runs)
    return SimpleNamespace(
        verdict=verdict,
        divergence=None,
        summary=verdict.summary + " " + "a long sentence of every route's figures " * 12,
        workload="user_resnet",
        circumstances=("data: synthetic", "machine: a test"),
    )


def test_a_diverging_peer_is_named_in_the_loss_panel_and_the_overview_title():
    losses = [2.3 - 0.05 * step for step in range(STEPS)]
    diverged = [loss * (1.0 if step < 5 else 1.3) for step, loss in enumerate(losses)]
    contents = _contents(diverged)
    (agreement,) = contents.verdict.agreements
    assert agreement.status == "diverges"
    title = loss_title(contents)
    assert "coincide" not in title
    assert f"torch {agreement.cell()}" in title
    overview = overview_title(contents)
    assert overview.splitlines()[0] in title  # the bits' line first, never cut away
    assert "torch diverges" in overview.splitlines()[0]


def test_an_agreeing_peer_is_said_to_agree_and_topos_alone_coincides():
    losses = [2.3 - 0.05 * step for step in range(STEPS)]
    contents = _contents(losses)
    assert "torch agrees" in loss_title(contents)
    alone = _contents(None, routes=3)
    assert loss_title(alone) == f"Loss: bit-identical over {STEPS} steps, the curves coincide"
    assert overview_title(alone).startswith(f"bit-identical over {STEPS} steps")
