"""`grade --repeat auto`: rounds of repeats are added until every route's time is
decisive (wholly beyond the tolerance or wholly within it) or the budget would run out.
The stopping rule on synthetic repeats, the continuation a grade runs, `--repeat`'s
text, and one real grade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.grading import grade_tiny
from tests.cli.quiet_runs import runs
from topos_cli.commands.repeats_until_decisive import RepeatsUntilDecisive
from topos_cli.harness.grade_preparation import GradeOptions, prepare
from topos_cli.harness.route_runner import GatheredRepeats
from topos_cli.judge.repeat_stopping import (
    BUDGET_SPENT,
    DECIDED,
    DECISIVE,
    LEAST_REPEATS,
    RUN_FAILED,
    stop_repeating,
)
from topos_cli.judge.time_judgement import INCONCLUSIVE, SLOWER, WITHIN, judge_time
from topos_cli.result.repeat import Repeat
from topos_cli.shared.errors import ToposUsageError
from topos_cli.shared.repeat_text import DEFAULT_REPEAT_BUDGET_SECONDS, parse_repeat

#: Each synthetic round "takes" this long on the fake clock; the budget fits six.
ROUND_SECONDS = 10.0
BUDGET_SECONDS = 65.0


def judged(new: list[Repeat], old: list[Repeat]) -> dict[str, object]:
    """The one time judgement of `new` against `old`, by route name."""
    return {"recorded": judge_time(new, old, tolerance=0.10)}


def rounds_until_stop(new_medians: list[float], old_medians: list[float], **made: object):
    """Runs the stopping rule one synthetic round at a time (the medians cycle), the
    elapsed time on a fake clock; returns the stop and the last judgement."""
    repeats = 0
    while True:
        repeats += 1
        new = runs("recorded", [new_medians[i % len(new_medians)] for i in range(repeats)], **made)
        old = runs("engine", [old_medians[i % len(old_medians)] for i in range(repeats)], seed=1)
        judgements = judged(new, old)
        stop = stop_repeating(
            judgements,
            repeats=repeats,
            elapsed_seconds=repeats * ROUND_SECONDS,
            round_seconds=ROUND_SECONDS,
            budget_seconds=BUDGET_SECONDS,
        )
        if stop is not None:
            return stop, judgements["recorded"]
        assert repeats < 1000, "the stopping rule never stopped"


def test_identical_time_stops_as_soon_as_a_test_can_be_made_and_says_no_change() -> None:
    stop, judgement = rounds_until_stop([0.0100], [0.0100])
    assert (stop.reason, stop.repeats) == (DECIDED, LEAST_REPEATS)
    assert judgement.outcome == WITHIN


def test_a_step_twenty_percent_slower_stops_early_as_a_claim() -> None:
    stop, judgement = rounds_until_stop([0.0120], [0.0100])
    assert (stop.reason, stop.repeats) == (DECIDED, LEAST_REPEATS)
    assert judgement.outcome == SLOWER


def test_repeats_that_wander_across_the_tolerance_stop_at_the_budget_undecided() -> None:
    # One repeat in two 25% slower: the interval straddles the band whatever the count.
    stop, judgement = rounds_until_stop([0.0090, 0.0125], [0.0100])
    assert stop.reason == BUDGET_SPENT
    # Six rounds of ten seconds fit 65 s; a seventh would not.
    assert stop.repeats == 6
    assert judgement.outcome not in DECISIVE
    assert "budget of 65 s spent; undecided: recorded" in stop.words


def test_a_disturbed_route_stops_at_the_budget_inconclusive() -> None:
    def disturbed(route: str, medians: list[float], **made: object) -> list[Repeat]:
        # Every step's wall time twice what its CPU explains, each preempted.
        made_runs = runs(route, medians, **made)
        return [
            Repeat(
                run.route,
                run.repeat,
                "ok",
                loss_bits=run.loss_bits,
                step_seconds=run.step_seconds,
                step_cpu_seconds=tuple(s * 0.4 for s in run.step_seconds),
                step_involuntary_switches=(5,) * len(run.step_seconds),
            )
            for run in made_runs
        ]

    repeats, judgement = 0, None
    stop = None
    while stop is None:
        repeats += 1
        new = disturbed("recorded", [0.0100] * repeats)
        old = runs("engine", [0.0100] * repeats, seed=1)
        judgement = judged(new, old)["recorded"]
        stop = stop_repeating(
            {"recorded": judgement},
            repeats=repeats,
            elapsed_seconds=repeats * ROUND_SECONDS,
            round_seconds=ROUND_SECONDS,
            budget_seconds=BUDGET_SECONDS,
        )
    assert (stop.reason, stop.repeats) == (BUDGET_SPENT, 6)
    assert judgement.outcome == INCONCLUSIVE


def test_fewer_repeats_than_a_test_needs_never_stop_and_a_failed_run_does() -> None:
    open_judgement = {"recorded": judge_time(runs("r", [0.01]), runs("e", [0.01]), tolerance=0.1)}
    assert open_judgement["recorded"].outcome == INCONCLUSIVE
    early = stop_repeating(
        open_judgement, repeats=1, elapsed_seconds=1e9, round_seconds=1.0, budget_seconds=1.0
    )
    assert early is None
    failed = stop_repeating(
        open_judgement,
        repeats=3,
        elapsed_seconds=0.0,
        round_seconds=1.0,
        budget_seconds=100.0,
        failed=True,
    )
    assert failed is not None and failed.reason == RUN_FAILED


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_continuation_plans_balanced_rounds_until_every_route_is_decisive(
    tmp_path: Path,
) -> None:
    options = GradeOptions(
        workload="mnist", steps=20, repeat=3, repeat_budget=100.0, json_path=str(tmp_path / "r")
    )
    preparation = prepare(options)
    clock = FakeClock()
    more = RepeatsUntilDecisive(preparation, clock=clock)
    gathered = GatheredRepeats()
    # Three rounds of wandering recorded times: undecided, so a fourth round is planned,
    # in the reversed order of the third (recorded first), numbered 3.
    medians = [0.0090, 0.0125, 0.0090, 0.0125]
    gathered.results = runs("engine", [0.01] * 3, seed=1) + runs("recorded", medians[:3])
    clock.now = 30.0
    added = more(gathered)
    assert [(request.route, request.repeat) for request in added] == [
        ("recorded", 3),
        ("engine", 3),
    ]
    assert more.stop is None
    preparation.requests.extend(added)
    # The fourth round took 40 s: 70 s gone, another 40 s would pass the 100 s budget.
    gathered.results = runs("engine", [0.01] * 4, seed=1) + runs("recorded", medians)
    clock.now = 70.0
    assert more(gathered) == []
    assert more.stop is not None and more.stop.reason == BUDGET_SPENT
    assert more.stop.repeats == 4


def test_the_continuation_judges_against_the_other_checkout(tmp_path: Path) -> None:
    options = GradeOptions(
        workload="mnist", steps=20, repeat=3, repeat_budget=100.0, json_path=str(tmp_path / "r")
    )
    preparation = prepare(options)
    more = RepeatsUntilDecisive(preparation, against="main", clock=FakeClock())
    mine = runs("engine", [0.0100] * 3) + runs("recorded", [0.0100] * 3, seed=2)
    # The other checkout: engine the same, recorded 25% slower (so this one is faster).
    theirs = runs("engine@against", [0.0100] * 3, seed=3)
    theirs += runs("recorded@against", [0.0125] * 3, seed=4)
    judgements = more.judgements(mine + theirs)
    assert {name: judgement.outcome for name, judgement in judgements.items()} == {
        "engine": WITHIN,
        "recorded": "faster",
    }
    gathered = GatheredRepeats(results=mine + theirs)
    assert more(gathered) == [] and more.stop is not None and more.stop.reason == DECIDED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", (3, None)),
        ("auto", (None, DEFAULT_REPEAT_BUDGET_SECONDS)),
        ("auto:20m", (None, 1200.0)),
        ("AUTO:90s", (None, 90.0)),
        ("auto:45", (None, 45.0)),
    ],
)
def test_repeat_reads_a_count_or_auto_with_a_budget(text: str, expected: tuple) -> None:
    assert parse_repeat(text) == expected


@pytest.mark.parametrize("text", ["automatic", "auto:", "auto:-5s", "auto:soon", "0", "2.5"])
def test_repeat_refuses_what_is_neither_in_one_line(text: str) -> None:
    with pytest.raises(ToposUsageError, match="--repeat") as caught:
        parse_repeat(text)
    assert "\n" not in str(caught.value)


def test_a_grade_with_repeat_auto_stops_where_the_rule_says(tmp_path: Path) -> None:
    """A real grade of a user-written tiny workload: it stopped at the first round where
    every judgement was decisive, or with the budget spent and some judgement open.
    Replaying the stopping rule on the result's own runs, round by round, says which."""
    completed, result = grade_tiny("sleepy", tmp_path, "--repeat", "auto:6s", steps=6)
    assert result is not None, completed.stderr
    settings = result["settings"]
    assert settings["repeat_budget_seconds"] == 6.0
    rounds = settings["repeat"]
    assert rounds >= LEAST_REPEATS
    runs_made = [Repeat.from_json(run) for run in result["repeats"]]
    assert sorted({run.repeat for run in runs_made}) == list(range(rounds))
    preparation = prepare(GradeOptions(workload="mnist", repeat=3, json_path=str(tmp_path / "x")))
    replay = RepeatsUntilDecisive(preparation)

    def decisive_after(count: int) -> bool:
        kept = [run for run in runs_made if run.repeat < count]
        judgements = replay.judgements(kept)
        return all(judgement.outcome in DECISIVE for judgement in judgements.values())

    stop = settings["repeat_stop"]
    assert stop in completed.stdout
    for earlier in range(LEAST_REPEATS, rounds):
        assert not decisive_after(earlier), f"round {earlier} was decisive, yet it went on"
    if "every route's time decisive" in stop:
        assert decisive_after(rounds)
    else:
        assert "budget of 6 s spent" in stop and not decisive_after(rounds)
    assert json.dumps(result)  # the result is plain JSON all through
