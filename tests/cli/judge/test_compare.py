"""Tests of comparing two results: regressions beyond tolerance, significance, refusals."""

from __future__ import annotations

import random

import pytest

from topos_cli.judge.compare import compare_results
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result, read_result
from topos_cli.result.tolerance import CompareSettings
from topos_cli.shared.errors import IncomparableResultsError, ResultFileError

MEBIBYTE = 1024 * 1024
STEPS = 60


def make_result(
    *,
    milliseconds: dict[str, float] | None = None,
    peaks: dict[str, list[int]] | None = None,
    repeats: int = 3,
    jitter: float = 0.01,
    seed: int = 1,
    workload: str = "cifar10",
    steps: int = STEPS,
    ready: int = 200 * MEBIBYTE,
) -> dict:
    """A result with the given median ms/step and per-repeat peaks per route."""
    milliseconds = milliseconds or {"engine": 100.0, "recorded": 90.0}
    generator = random.Random(seed)
    runs = []
    for repeat in range(repeats):
        for route, scale in milliseconds.items():
            route_peaks = (peaks or {}).get(route, [800 * MEBIBYTE] * repeats)
            runs.append(
                Repeat(
                    route,
                    repeat,
                    "ok",
                    tuple(range(steps)),
                    tuple(
                        scale / 1000 * (1 + jitter * (2 * generator.random() - 1))
                        for _ in range(steps)
                    ),
                    peak_rss_bytes=route_peaks[repeat],
                    ready_rss_bytes=ready,
                )
            )
    return compose_result(
        workload={"name": workload, "data": {"source": "synthetic"}},
        host={"cpu_model": "test CPU"},
        steps=steps,
        repeats=runs,
        verdict=decide_verdict(runs),
        settings={"threads": 2},
    ).to_json()


def compare_documents(old: dict, new: dict, **options):
    """`compare_results` of two results as their files hold them (read as `load_result` does)."""
    return compare_results(
        read_result(old, options.get("old_source", "the old result")),
        read_result(new, options.get("new_source", "the new result")),
        **options,
    )


def change_of(comparison, route: str, figure: str):
    """The change of one route's figure."""
    (found,) = [c for c in comparison.changes if (c.route, c.figure) == (route, figure)]
    return found


def test_the_same_figures_show_no_regression():
    comparison = compare_documents(make_result(), make_result(seed=2))
    assert comparison.regressions == ()
    assert comparison.exit_status == 0
    assert {change.status for change in comparison.changes} == {"within tolerance"}
    assert len(comparison.changes) == 6  # two routes, three figures each
    assert comparison.summary == "cifar10: no regression beyond 10% on time, 5% on memory"


def test_a_significant_slowdown_beyond_tolerance_is_a_regression():
    old = make_result()
    new = make_result(milliseconds={"engine": 100.0, "recorded": 108.0}, seed=3)
    comparison = compare_documents(old, new)
    change = change_of(comparison, "recorded", "ms/step")
    assert change.change == pytest.approx(0.2, abs=0.01)
    assert change.p_value < 0.01
    assert change.significant is True
    assert change.time.lower > 1.1
    assert change.status == "regression"
    assert comparison.exit_status == 4
    assert comparison.summary.startswith("cifar10: 1 regression (recorded ms/step +20.")


def test_one_repeat_a_side_is_inconclusive_not_a_regression():
    old = make_result(repeats=1)
    new = make_result(repeats=1, milliseconds={"engine": 100.0, "recorded": 108.0})
    comparison = compare_documents(old, new)
    change = change_of(comparison, "recorded", "ms/step")
    assert change.p_value is None
    assert change.significant is None
    assert change.status == "inconclusive"
    assert "a test needs 3" in change.time.reason
    assert comparison.exit_status == 5


def with_step_seconds(result: dict, route: str, seconds: list[float]) -> dict:
    """The result with every repeat of `route` given these step times."""
    for repeat in result["repeats"]:
        if repeat["route"] == route:
            repeat["step_seconds"] = list(seconds)
    return result


def with_repeat_medians(result: dict, route: str, medians: list[float]) -> dict:
    """The result with each repeat of `route` stepping steadily at its own median."""
    repeats = [repeat for repeat in result["repeats"] if repeat["route"] == route]
    for repeat, median in zip(repeats, medians, strict=True):
        count = len(repeat["step_seconds"])
        repeat["step_seconds"] = [median * (1 + 0.001 * (i % 3 - 1)) for i in range(count)]
    return result


def test_a_slowdown_the_repeats_cannot_confirm_is_no_clear_difference():
    # Medians 0.40 then 0.45 (+12.5%, past the 10% tolerance), but the repeats spread
    # as widely as the change: the repeats, not the steps, are the evidence.
    old = with_repeat_medians(make_result(), "recorded", [0.40, 0.34, 0.46])
    new = with_repeat_medians(make_result(), "recorded", [0.45, 0.39, 0.51])
    comparison = compare_documents(old, new)
    change = change_of(comparison, "recorded", "ms/step")
    assert (change.old, change.new) == pytest.approx((400.0, 450.0), rel=0.01)
    assert change.p_value >= 0.05
    assert change.status == "no clear difference"
    assert comparison.exit_status == 0


def test_a_speedup_is_an_improvement_not_a_regression():
    old = make_result()
    new = make_result(milliseconds={"engine": 100.0, "recorded": 60.0})
    comparison = compare_documents(old, new)
    assert change_of(comparison, "recorded", "ms/step").status == "improvement"
    assert comparison.exit_status == 0


def test_memory_growth_past_five_percent_is_a_regression():
    old = make_result(peaks={"recorded": [800 * MEBIBYTE] * 3})
    new = make_result(peaks={"recorded": [848 * MEBIBYTE] * 3})
    comparison = compare_documents(old, new)
    peak = change_of(comparison, "recorded", "peak RSS")
    delta = change_of(comparison, "recorded", "training delta")
    assert peak.change == pytest.approx(0.06)
    assert peak.status == "regression"
    assert delta.change == pytest.approx(48 / 600)
    assert delta.status == "regression"
    assert comparison.exit_status == 4


def test_memory_growth_within_overlapping_repeat_ranges_is_not_significant():
    old = make_result(repeats=2, peaks={"recorded": [800 * MEBIBYTE, 900 * MEBIBYTE]})
    new = make_result(repeats=2, peaks={"recorded": [880 * MEBIBYTE, 910 * MEBIBYTE]})
    peak = change_of(compare_documents(old, new), "recorded", "peak RSS")
    assert peak.change > 0.05
    assert peak.significant is False
    assert peak.status == "not significant"


def test_memory_growth_beyond_the_repeat_ranges_is_significant():
    old = make_result(repeats=2, peaks={"recorded": [800 * MEBIBYTE, 801 * MEBIBYTE]})
    new = make_result(repeats=2, peaks={"recorded": [880 * MEBIBYTE, 881 * MEBIBYTE]})
    peak = change_of(compare_documents(old, new), "recorded", "peak RSS")
    assert (peak.significant, peak.status) == (True, "regression")


def test_a_tiny_memory_change_is_within_tolerance_whatever_its_ratio():
    old = make_result(ready=799 * MEBIBYTE)  # a 1 MiB training delta
    new = make_result(ready=int(798.5 * MEBIBYTE))  # 1.5 MiB: +50%, but half a MiB
    delta = change_of(compare_documents(old, new), "recorded", "training delta")
    assert delta.change == pytest.approx(0.5)
    assert delta.status == "within tolerance"


def test_tolerances_are_settings():
    old = make_result()
    new = make_result(milliseconds={"engine": 100.0, "recorded": 95.0})
    strict = CompareSettings(time_tolerance=0.02)
    assert change_of(
        compare_documents(old, new, settings=strict), "recorded", "ms/step"
    ).status == ("regression")


def test_another_workload_is_refused_in_one_line():
    with pytest.raises(IncomparableResultsError) as raised:
        compare_documents(
            make_result(),
            make_result(workload="mnist"),
            old_source="old.json",
            new_source="new.json",
        )
    assert str(raised.value) == (
        "cannot compare results of different workloads: old.json is cifar10, new.json is mnist"
    )
    assert raised.value.exit_status == 2


def test_another_schema_is_refused_in_one_line():
    old = make_result()
    old["schema"] = "topos.grade/0"
    with pytest.raises(ResultFileError) as raised:
        compare_documents(old, make_result(), old_source="old.json")
    assert str(raised.value) == "old.json has schema topos.grade/0; this topos reads topos.grade/1"
    assert raised.value.exit_status == 2


def test_results_graded_at_other_steps_data_or_shards_are_refused_in_one_line():
    with pytest.raises(IncomparableResultsError) as raised:
        compare_documents(
            make_result(steps=60),
            make_result(steps=50),
            old_source="old.json",
            new_source="new.json",
        )
    assert str(raised.value).startswith(
        "cannot compare results graded at different steps: old.json has 60, new.json has 50"
    )
    assert raised.value.exit_status == 2
    old, new = make_result(), make_result()
    old["workload"]["data"]["fingerprint"] = "a" * 64
    new["workload"]["data"]["fingerprint"] = "b" * 64
    with pytest.raises(IncomparableResultsError, match="data"):
        compare_documents(old, new)
    old, new = make_result(), make_result()
    old["routes"] = {"engine": {"shards": 2}, "recorded": {"shards": 2}}
    new["routes"] = {"engine": {"shards": 1}, "recorded": {"shards": 1}}
    with pytest.raises(IncomparableResultsError, match="shards"):
        compare_documents(old, new)


def test_differences_between_the_grades_are_noted():
    old = make_result(steps=60)
    new = make_result(steps=60, milliseconds={"engine": 100.0, "adjoint": 80.0})
    new["settings"]["threads"] = 4
    comparison = compare_documents(old, new, old_source="old.json", new_source="new.json")
    assert comparison.notes == (
        "threads differs: 2 then 4",
        "route recorded is only in old.json",
        "route adjoint is only in new.json",
    )
    assert [change.route for change in comparison.changes] == ["engine"] * 3


def test_a_route_that_failed_in_the_new_result_is_a_failure_never_no_regression():
    old = make_result()
    new = make_result()
    for repeat in new["repeats"]:
        if repeat["route"] == "recorded":
            repeat["status"] = "failed"
    comparison = compare_documents(old, new, new_source="new.json")
    assert change_of(comparison, "recorded", "ms/step").status == "missing"
    assert "route recorded did not complete in new.json" in comparison.notes
    assert comparison.exit_status == 1
    assert comparison.summary.endswith(
        "route recorded did not finish in new.json (failed: 3 of 3 runs)"
    )


def test_a_route_with_no_runs_in_the_new_result_is_a_failure():
    old = make_result()
    new = make_result()
    new["repeats"] = [repeat for repeat in new["repeats"] if repeat["route"] != "recorded"]
    comparison = compare_documents(old, new, new_source="new.json")
    assert comparison.exit_status == 1
    assert comparison.failures == ("route recorded has no run in new.json",)


def test_the_comparison_is_json_ready():
    import json

    document = compare_documents(make_result(), make_result()).record().to_json()
    assert json.loads(json.dumps(document, allow_nan=False))["exit_status"] == 0
    assert document["changes"][0]["figure"] == "ms/step"


def test_standard_input_named_twice_is_refused_as_read_only_once(tmp_path):
    import json
    import subprocess

    from tests.cli.grading import TOPOS, environment, one_line_error
    from tests.cli.machines import machine_result

    completed = subprocess.run(
        [*TOPOS, "compare", "-", "-"],
        cwd=tmp_path,
        env=environment(),
        input=json.dumps(machine_result("ubuntu-latest", repeats=3)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2, completed.stderr
    assert "standard input can be read only once" in one_line_error(completed)
