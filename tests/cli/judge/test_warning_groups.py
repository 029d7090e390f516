"""Warnings are grouped by cause: a quiet grade's verdict is not buried under one bullet
and one remedy per route that all say the same thing."""

from __future__ import annotations

from topos_cli.judge.verdict import decide_verdict
from topos_cli.judge.verdict.noise import NoiseWarning
from topos_cli.render.verdict_table import verdict_notes
from topos_cli.render.warning_groups import group_warnings
from topos_cli.result.float_bits import float32_bits
from topos_cli.result.repeat import Repeat

STEPS = 40


def _noisy_run(route: str, outliers: int) -> Repeat:
    """A run whose last `outliers` steps take ten times as long as the rest."""
    seconds = [0.010 + 0.0001 * (step % 3) for step in range(STEPS)]
    for step in range(STEPS - outliers, STEPS):
        seconds[step] = 0.100
    bits = tuple(float32_bits(2.3 - 0.01 * step) for step in range(STEPS))
    return Repeat(route, 0, "ok", bits, tuple(seconds))


def test_one_line_per_cause_names_every_route_it_touched():
    runs = [_noisy_run("engine", 3), _noisy_run("recorded", 4), _noisy_run("remat", 0)]
    verdict = decide_verdict(runs)
    outliers = [warning for warning in verdict.warnings if warning.kind == "outliers"]
    assert [warning.route for warning in outliers] == ["engine", "recorded"]  # per route
    lines = [line for line in verdict_notes(verdict) if "outliers" in line]
    assert len(lines) == 1, lines  # ... but said once
    assert "engine 3 of" in lines[0] and "recorded 4 of" in lines[0]
    assert "remat" not in lines[0]
    remedies = [line for line in verdict_notes(verdict) if "remedy" in line]
    assert len(remedies) == len(group_warnings(verdict.warnings))


def test_warnings_with_other_causes_or_none_stay_apart():
    first = NoiseWarning("outliers", "engine", "engine: 3 of 40", "quiet", "outliers", "engine 3")
    other = NoiseWarning("outliers", "remat", "remat: 2 of 40", "quiet", "other cause", "remat 2")
    load = NoiseWarning("load", None, "the machine was busy", "stop other work")
    older = NoiseWarning("variation", "engine", "engine: varies by 30%", "repeat")
    groups = group_warnings([first, other, load, older])
    assert [group.message for group in groups] == [
        "engine: 3 of 40",
        "remat: 2 of 40",
        "the machine was busy",
        "engine: varies by 30%",
    ]
    assert groups[0].routes == ("engine",) and groups[2].routes == ()
