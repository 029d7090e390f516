"""The sentence `compare` and `grade --against` end on never says more than the judgements
show: "no regression beyond 10%" only when every interval's upper end lies within it, an
inconclusive time says so, a single repeat has no interval (issue 39, item 4)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from tests.cli.grading import topos
from tests.cli.quiet_runs import WIDE_NEW, WIDE_OLD, runs
from topos_cli.judge.against import compare_checkouts, time_phrase
from topos_cli.judge.compare import compare_results
from topos_cli.judge.time_judgement import INCONCLUSIVE, NO_CLEAR, judge_time
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result
from topos_cli.shared.exit_status import ExitStatus


def test_an_interval_reaching_past_the_tolerance_is_not_called_no_regression():
    # "engine 'no clear difference: 1.14x the other's time (0.92-1.20)', then 'against
    # HEAD~3: no regression beyond 10% on time', exit 0".
    comparison = compare_checkouts(
        runs("engine", WIDE_NEW), runs("engine@against", WIDE_OLD, seed=1), other_name="HEAD~3"
    )
    (route,) = comparison.routes
    assert route.time.outcome == NO_CLEAR and route.time.upper > 1.2
    assert "no regression beyond 10% on time" not in comparison.summary
    assert comparison.summary == (
        "against HEAD~3: no regression shown for engine: its interval 0.92-1.21x allows up "
        "to 21% slower; no regression beyond 5% on memory"
        "; loss bits identical to the other's on every route compared"
    )
    # Nothing was judged a regression, nor inconclusive: exit 0, as the words say.
    assert comparison.exit_status == ExitStatus.OK
    # Within the band at its upper end, the claim is made.
    quiet = compare_checkouts(
        runs("engine", WIDE_OLD, seed=2), runs("engine@against", WIDE_OLD, seed=1), other_name="x"
    )
    assert quiet.summary == (
        "against x: no regression beyond 10% on time, 5% on memory"
        "; loss bits identical to the other's on every route compared"
    )


def test_one_repeat_each_is_inconclusive_in_the_summary_and_has_no_interval():
    # "recorded: inconclusive: 1.35x the other's time (1.35-1.35), 0 repeats each", then
    # "against HEAD~30: no regression beyond 10% on time, 5% on memory", exit 5.
    comparison = compare_checkouts(
        runs("recorded", [0.0135]), runs("recorded@against", [0.0100], seed=1), other_name="HEAD~30"
    )
    (route,) = comparison.routes
    assert route.time.outcome == INCONCLUSIVE and not route.time.has_interval
    assert time_phrase(route.time) == (
        "inconclusive: 1.35x the other's time, one repeat each: no interval"
    )
    assert comparison.summary == (
        "against HEAD~30: inconclusive for recorded (1.35x, one repeat each: no interval; "
        "too few repeats); no regression beyond 5% on memory"
        "; loss bits identical to the other's on every route compared"
    )
    assert comparison.exit_status == ExitStatus.INCONCLUSIVE


def test_the_repeats_say_how_many_ran_and_how_many_were_usable():
    one = runs("recorded", [0.0135])
    # Every step of the one repeat waited for a processor it did not get.
    disturbed = [
        Repeat(
            run.route,
            run.repeat,
            "ok",
            loss_bits=run.loss_bits,
            step_seconds=run.step_seconds,
            step_cpu_seconds=tuple(seconds * 0.5 for seconds in run.step_seconds),
            step_involuntary_switches=(6,) * len(run.step_seconds),
        )
        for run in one
    ]
    judgement = judge_time(disturbed, runs("recorded", [0.0100]), tolerance=0.10)
    assert judgement.repeats == "one repeat each, 0 and 1 usable"
    assert judgement.inconclusive_because == "disturbed"
    three = judge_time(runs("r", [0.01] * 3), runs("r", [0.01] * 2, seed=1), tolerance=0.1)
    assert three.repeats == "3 and 2 repeats"
    assert judge_time(runs("r", [0.01] * 3), runs("r", [0.01] * 3), tolerance=0.1).repeats == (
        "3 repeats each"
    )


def result_of(route_runs: list[Repeat], day: int) -> dict:
    """A result file's contents holding `route_runs`, as a grade writes it."""
    result = compose_result(
        workload={"name": "mnist", "data": {"source": "synthetic", "fingerprint": "f" * 64}},
        host={"cpu_model": "test CPU"},
        steps=len(route_runs[0].step_seconds),
        repeats=route_runs,
        verdict=decide_verdict(route_runs),
        settings={"threads": None},
        created=datetime.fromisoformat(f"2026-08-{day:02d}T10:00:00+00:00"),
    )
    return result.to_json()


def test_compare_says_what_memory_ranges_that_overlap_allow():
    old = runs("engine", WIDE_OLD, peak_mebibytes=[500, 540, 520])
    new = runs("engine", WIDE_OLD, seed=3, peak_mebibytes=[560, 530, 580])
    from topos_cli.result.grade_result import GradeResult

    comparison = compare_results(
        GradeResult.from_json(result_of(old, 14)), GradeResult.from_json(result_of(new, 15))
    )
    assert comparison.regressions == ()
    assert comparison.summary == (
        "mnist: no regression beyond 10% on time; engine peak RSS +7.7%, not shown to be a "
        "regression (its repeats' ranges overlap); engine training delta +12.5%, not shown "
        "to be a regression (its repeats' ranges overlap)"
    )


def test_topos_compare_of_two_result_files_words_its_exit_status(tmp_path: Path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(result_of(runs("engine", WIDE_OLD, seed=1), 14)))
    new.write_text(json.dumps(result_of(runs("engine", WIDE_NEW), 15)))
    completed = topos("compare", str(old), str(new), cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "no regression beyond 10% on time" not in completed.stdout
    assert (
        "mnist: no regression shown for engine: its interval 0.92-1.21x allows up to 21% "
        "slower; no regression beyond 5% on memory"
    ) in " ".join(completed.stdout.split())
    single = tmp_path / "single.json"
    single.write_text(json.dumps(result_of(runs("engine", [0.0135]), 16)))
    thin = topos("compare", str(old), str(single), cwd=tmp_path)
    assert thin.returncode == ExitStatus.INCONCLUSIVE, thin.stdout + thin.stderr
    assert "inconclusive for engine (1.35x, 1 and 3 repeats: no interval; too few repeats)" in (
        " ".join(thin.stdout.split())
    )


def test_an_other_side_whose_runs_fail_is_a_failed_grade_never_a_time_verdict():
    # `--against DIR` whose package raises at import: every run of the other side fails.
    failed = [
        Repeat("recorded@against", repeat, "failed", detail="ImportError: boom")
        for repeat in range(3)
    ]
    comparison = compare_checkouts(
        runs("recorded", [0.0100, 0.0101, 0.0099]), failed, other_name="../broken"
    )
    assert comparison.exit_status == ExitStatus.ROUTE_FAILED
    assert "the other side failed (recorded@against #1: failed" in comparison.summary
    assert "no regression" not in comparison.summary
