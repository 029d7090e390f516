"""Tests of the verdict: parity at every step, speed, memory, noise, summary, exit status."""

from __future__ import annotations

import json
import random
import re
import zlib

import pytest

from topos_cli.judge.verdict import VerdictSettings, decide_verdict, judge_parity
from topos_cli.result.float_bits import describe_bits, float32_bits, format_bits
from topos_cli.result.repeat import Repeat
from topos_cli.shared.errors import ExitStatus

STEPS = 300
MEBIBYTE = 1024 * 1024


def trajectory(steps: int = STEPS) -> list[int]:
    """A descending loss trajectory as float32 bit patterns."""
    return [float32_bits(2.302585 - 0.004 * step) for step in range(steps)]


def make_run(
    route: str,
    repeat: int = 0,
    *,
    milliseconds: float = 100.0,
    jitter: float = 0.01,
    seed: int | None = None,
    bits: list[int] | None = None,
    status: str = "ok",
    peak: int | None = 1000 * MEBIBYTE,
    ready: int | None = 300 * MEBIBYTE,
    steps: int = STEPS,
    detail: str | None = None,
) -> Repeat:
    """A run whose step times scatter uniformly within `jitter` around `milliseconds`."""
    # crc32, not hash(): str hashes change between processes, and the tests must not.
    generator = random.Random(zlib.crc32(f"{route}/{repeat}".encode()) if seed is None else seed)
    loss_bits = trajectory(steps) if bits is None else bits
    seconds = [milliseconds / 1000 * (1 + jitter * (2 * generator.random() - 1)) for _ in loss_bits]
    return Repeat(
        route=route,
        repeat=repeat,
        status=status,
        loss_bits=tuple(loss_bits),
        step_seconds=tuple(seconds),
        peak_rss_bytes=peak,
        ready_rss_bytes=ready,
        detail=detail,
    )


def broken_at(step: int, ulps: int) -> list[int]:
    """The standard trajectory with the loss at `step` moved `ulps` float32 steps up."""
    bits = trajectory()
    bits[step] += ulps
    return bits


def test_fabricated_parity_break_at_step_7_is_named_with_both_values_and_ulps():
    verdict = decide_verdict(
        [make_run("engine"), make_run("recorded", milliseconds=90, bits=broken_at(7, 3))]
    )
    divergence = verdict.parity.divergence
    expected = trajectory()[7]
    assert verdict.parity.status == "broken"
    assert divergence.step == 7
    assert (divergence.reference_route, divergence.route) == ("engine", "recorded")
    assert divergence.reference_bits == expected
    assert divergence.bits == expected + 3
    assert divergence.ulps == 3
    assert "losses part at step 7" in verdict.summary
    assert format_bits(expected) in verdict.summary
    assert format_bits(expected + 3) in verdict.summary
    assert "3 ulps apart" in verdict.summary
    assert verdict.exit_status == ExitStatus.PARITY_BROKEN == 3


def test_parity_is_checked_at_every_step_not_only_the_first_and_last():
    bits = trajectory()
    bits[150] += 1  # the middle of the trajectory; first and last agree
    verdict = decide_verdict([make_run("engine"), make_run("recorded", bits=bits)])
    assert verdict.parity.divergence.step == 150
    assert "1 ulp apart" in verdict.summary
    assert verdict.exit_status == 3


def test_bit_identical_routes_give_the_documented_summary_sentence():
    runs = [
        make_run("engine", 0, milliseconds=112.0, peak=1350 * MEBIBYTE),
        make_run("recorded", 0, milliseconds=100.0, peak=1053 * MEBIBYTE),
        make_run("recorded", 1, milliseconds=100.0, peak=1053 * MEBIBYTE),
        make_run("engine", 1, milliseconds=112.0, peak=1350 * MEBIBYTE),
        make_run("engine", 2, milliseconds=112.0, peak=1350 * MEBIBYTE),
        make_run("recorded", 2, milliseconds=100.0, peak=1053 * MEBIBYTE),
    ]
    verdict = decide_verdict(runs)
    assert verdict.parity.status == "bit-identical"
    assert verdict.parity.steps == STEPS
    assert re.fullmatch(
        r"recorded: 1\.12 ± 0\.0\dx faster, 0\.78x the memory of engine, "
        r"time on 3 repeats each; "
        r"losses bit-identical over 300 steps",
        verdict.summary,
    ), verdict.summary
    ratio = verdict.route("recorded").speed.ratio
    assert ratio.significant is True
    assert not ratio.tentative
    assert verdict.exit_status == ExitStatus.OK


def test_the_earliest_divergence_over_all_runs_is_named():
    runs = [
        make_run("engine", 0),
        make_run("recorded", 0, bits=broken_at(9, 1)),
        make_run("recorded", 1, bits=broken_at(5, 2)),
    ]
    divergence = decide_verdict(runs).parity.divergence
    assert (divergence.step, divergence.route, divergence.repeat) == (5, "recorded", 1)


def test_an_a_a_break_says_the_route_is_not_repeatable():
    runs = [make_run("engine", 0), make_run("engine", 1, bits=broken_at(4, 1))]
    verdict = decide_verdict(runs)
    engine = verdict.parity.routes[0]
    assert engine.repeatable is False
    assert engine.repeat_divergence.step == 4
    expected, parted = describe_bits(trajectory()[4]), describe_bits(trajectory()[4] + 1)
    assert verdict.summary.endswith(
        f"engine is not repeatable: its losses part at step 4: engine (repeat 1) {expected} "
        f"vs engine (repeat 2) {parted}, 1 ulp apart"
    )
    assert verdict.exit_status == 3


def test_repeatable_routes_pass_the_a_a_check():
    runs = [make_run(route, repeat) for route in ("engine", "recorded") for repeat in (0, 1)]
    parity = judge_parity(runs)
    assert [route.repeatable for route in parity.routes] == [True, True]
    assert parity.runs == 4


def test_a_nan_divergence_is_not_comparable():
    bits = trajectory()
    bits[12] = 0x7FC0_0000
    verdict = decide_verdict(
        [make_run("engine"), make_run("recorded", bits=bits[:13], status="nonfinite")]
    )
    assert verdict.parity.divergence.step == 12
    assert verdict.parity.divergence.ulps is None
    assert "not comparable (NaN)" in verdict.summary
    assert "loss not finite: recorded at step 12" in verdict.summary
    assert verdict.route("recorded").failures[0].nonfinite_step == 12
    assert verdict.exit_status == 3  # parity is broken as well as the run


def test_the_same_nan_in_every_route_keeps_parity_but_fails_the_grade():
    bits = [*trajectory(20), 0x7FC0_0000]
    runs = [make_run(route, bits=bits, status="nonfinite") for route in ("engine", "recorded")]
    verdict = decide_verdict(runs)
    assert verdict.parity.status == "bit-identical"
    assert "loss not finite: engine at step 20, recorded at step 20" in verdict.summary
    assert verdict.exit_status == ExitStatus.ROUTE_FAILED


@pytest.mark.parametrize(
    ("status", "expected"),
    [("failed", 1), ("timed out", 1), ("nonfinite", 1), ("interrupted", 130), ("ok", 0)],
)
def test_exit_status_follows_the_runs(status, expected):
    runs = [make_run("engine"), make_run("recorded", status=status)]
    assert decide_verdict(runs).exit_status == expected


def test_an_interrupt_outranks_a_parity_break():
    runs = [make_run("engine", status="interrupted"), make_run("recorded", bits=broken_at(3, 1))]
    assert decide_verdict(runs).exit_status == ExitStatus.INTERRUPTED


def test_a_route_that_failed_partway_leaves_parity_incomplete():
    runs = [
        make_run("engine"),
        make_run(
            "recorded",
            steps=40,
            status="failed",
            detail="exit status 1\nTraceback (most recent call last):\nValueError: boom",
        ),
    ]
    verdict = decide_verdict(runs)
    assert verdict.parity.status == "incomplete"
    assert verdict.parity.steps == 40
    recorded = verdict.route("recorded")
    assert (recorded.status, recorded.completed, recorded.speed) == ("failed", 0, None)
    assert verdict.summary.startswith("recorded: failed (exit status 1)")
    assert verdict.parity.stopped_short == (("recorded", 0, 40),)
    assert verdict.summary.endswith(
        "parity incomplete: losses bit-identical over the first 40 steps; "
        "recorded stopped after 40 steps"
    )
    assert verdict.exit_status == 1


def test_a_failed_reference_leaves_other_routes_in_absolute_figures():
    runs = [
        make_run("engine", status="timed out", steps=0, peak=None, ready=None),
        make_run("recorded", milliseconds=250.0, jitter=0.0),
    ]
    verdict = decide_verdict(runs)
    assert verdict.route("recorded").speed.ratio is None
    assert verdict.parity.status == "not checked"
    assert verdict.summary == (
        "engine: timed out; recorded: 250.0 ms/step, 1000 MiB peak; "
        "parity not checked: engine reported no losses"
    )
    assert verdict.exit_status == 1


def test_without_engine_the_first_topos_route_is_the_reference():
    # `--routes recorded,torch`, the peers' own example: the peer's time and memory are
    # read against recorded, as its agreement is; a failed engine stays the reference.
    runs = [
        make_run("recorded", milliseconds=100.0, jitter=0.0),
        make_run("torch", milliseconds=150.0, jitter=0.0, peak=2000 * MEBIBYTE),
    ]
    verdict = decide_verdict(runs)
    assert verdict.reference == "recorded"
    assert verdict.route("torch").speed.ratio.factor == pytest.approx(1.5)
    assert verdict.route("torch").memory.peak_ratio == pytest.approx(2.0)
    assert verdict.route("recorded").speed.ratio is None
    assert "the memory of recorded" in verdict.summary


def test_a_reference_that_failed_in_some_repeats_says_so():
    runs = [
        make_run("engine", 0, milliseconds=112.0),
        make_run("engine", 1, status="timed out", steps=10),
        make_run("recorded", 0, milliseconds=100.0),
    ]
    verdict = decide_verdict(runs)
    # One completed repeat each: the time is inconclusive, never "1.12x faster".
    assert verdict.summary.startswith(
        "engine: 1 of 2 repeats timed out; recorded: inconclusive (0.89x the time), "
    )
    assert verdict.route("engine").completed == 1
    assert verdict.exit_status == 1


def test_the_first_step_is_reported_on_its_own_and_left_out_of_the_median():
    run = make_run("engine", milliseconds=100.0, jitter=0.0)
    cold = Repeat(
        route="engine",
        repeat=0,
        status="ok",
        loss_bits=run.loss_bits,
        step_seconds=(5.0, *run.step_seconds[1:]),
    )
    speed = decide_verdict([cold]).route("engine").speed
    assert speed.first_step_milliseconds == 5000.0
    assert speed.milliseconds_per_step.median == pytest.approx(100.0)
    assert speed.milliseconds_per_step.maximum == pytest.approx(100.0)
    assert speed.excluded_steps == 1
    assert speed.milliseconds_per_step.count == STEPS - 1


def test_a_warm_up_time_from_the_worker_is_the_first_step():
    run = Repeat(
        route="engine",
        repeat=0,
        status="ok",
        loss_bits=(1, 2, 3),
        step_seconds=(0.1, 0.1, 0.1),
        first_step_seconds=0.9,
    )
    settings = VerdictSettings(warmup_steps=0)
    speed = decide_verdict([run], settings=settings).route("engine").speed
    assert speed.first_step_milliseconds == pytest.approx(900.0)
    assert speed.milliseconds_per_step.count == 3


def test_a_slower_route_is_called_slower():
    runs = [make_run("engine", r, milliseconds=100.0) for r in range(3)]
    runs += [make_run("recorded", r, milliseconds=125.0) for r in range(3)]
    ratio = decide_verdict(runs).route("recorded").speed.ratio
    assert ratio.direction == "slower"
    assert ratio.factor == pytest.approx(1.25, abs=0.01)
    assert ratio.phrase.startswith("1.25 ± 0.0")
    assert ratio.phrase.endswith("x slower")
    assert ratio.significant is True


def test_one_repeat_each_is_not_tested_and_claims_nothing():
    runs = [make_run("engine", milliseconds=100.0), make_run("recorded", milliseconds=125.0)]
    ratio = decide_verdict(runs).route("recorded").speed.ratio
    assert ratio.direction == "inconclusive"
    assert ratio.significant is None and ratio.p_value is None
    assert ratio.phrase == "inconclusive (1.25x the time)"


def test_a_ratio_the_repeats_cannot_confirm_is_no_clear_difference():
    generator = random.Random(7)

    def noisy(route: str, repeat: int, scale: float) -> Repeat:
        seconds = tuple(scale * generator.uniform(0.1, 0.2) for _ in range(12))
        return Repeat(route, repeat, "ok", tuple(range(12)), seconds)

    runs = [noisy("engine", r, 1.0) for r in range(3)]
    runs += [noisy("recorded", r, 1.04) for r in range(3)]
    ratio = decide_verdict(runs).route("recorded").speed.ratio
    assert ratio.p_value >= 0.05  # the premise: these samples overlap too much to tell
    assert ratio.direction == "unclear"
    assert ratio.significant is False
    assert ratio.tentative
    assert ratio.phrase.startswith("~") and ratio.phrase.endswith("no clear difference")


def test_equal_speeds_are_phrased_as_the_same_speed():
    runs = [make_run(route, r, jitter=0.0) for route in ("engine", "recorded") for r in range(3)]
    ratio = decide_verdict(runs).route("recorded").speed.ratio
    assert ratio.direction == "same"
    assert ratio.phrase == "1.00 ± 0.00x the speed"


def test_memory_ratios_and_the_derived_training_delta():
    runs = [
        make_run("engine", peak=1000 * MEBIBYTE, ready=200 * MEBIBYTE),
        make_run("recorded", peak=780 * MEBIBYTE, ready=200 * MEBIBYTE),
    ]
    verdict = decide_verdict(runs)
    memory = verdict.route("recorded").memory
    assert memory.training_delta_bytes == 580 * MEBIBYTE
    assert memory.peak_ratio == pytest.approx(0.78)
    assert memory.training_delta_ratio == pytest.approx(580 / 800)
    assert verdict.route("engine").memory.peak_ratio is None
    assert "0.78x the memory of engine" in verdict.summary


def test_unmeasured_memory_is_left_out_of_the_summary():
    runs = [
        make_run(route, r, peak=None, ready=None)
        for route in ("engine", "recorded")
        for r in range(3)
    ]
    verdict = decide_verdict(runs)
    assert verdict.route("recorded").memory is None
    assert re.match(
        r"recorded: 1\.00 ± 0\.0\dx the speed of engine, time on 3 repeats each;",
        verdict.summary,
    ), verdict.summary


def test_a_steady_machine_raises_no_warning():
    verdict = decide_verdict([make_run("engine"), make_run("recorded")], load_average=0.2, cores=4)
    assert verdict.warnings == ()


def test_high_variation_warns_with_a_remedy():
    verdict = decide_verdict([make_run("engine", jitter=0.5)])
    (warning,) = verdict.warnings
    assert warning.kind == "variation"
    assert "coefficient of variation over 10%" in warning.message
    assert "--repeat" in warning.remedy


def test_outlying_steps_warn():
    run = make_run("engine", jitter=0.01)
    seconds = list(run.step_seconds)
    for step in range(1, STEPS, 10):  # one step in ten stalls for 3x as long
        seconds[step] *= 3
    stalled = Repeat("engine", 0, "ok", run.loss_bits, tuple(seconds))
    verdict = decide_verdict([stalled])
    kinds = [warning.kind for warning in verdict.warnings]
    assert "outliers" in kinds
    assert verdict.route("engine").speed.outliers == 30


def test_repeats_that_disagree_warn():
    runs = [make_run("engine", 0, milliseconds=100.0), make_run("engine", 1, milliseconds=130.0)]
    kinds = [warning.kind for warning in decide_verdict(runs).warnings]
    assert "repeat spread" in kinds


def test_a_busy_machine_warns():
    verdict = decide_verdict([make_run("engine")], load_average=3.0, cores=2)
    (warning,) = verdict.warnings
    assert warning.kind == "load"
    assert "load average 3.00 on 2 cores" in warning.message


def test_the_verdict_is_strict_json():
    bits = [*trajectory(10), 0x7F80_0000]
    runs = [make_run("engine", 0), make_run("engine", 1), make_run("recorded", bits=bits)]
    document = decide_verdict(runs).record().to_json()
    text = json.dumps(document, allow_nan=False)
    assert json.loads(text)["exit_status"] == 3
    other = document["parity"]["divergence"]["other"]
    assert (other["bits"], other["loss"]) == ("7f800000", "inf")
    assert "phrase" in document["routes"][1]["speed"]["ratio"]


def test_a_run_round_trips_through_its_dict():
    run = make_run("recorded", 2, steps=5)
    document = json.loads(json.dumps(run.to_json(), allow_nan=False))
    assert document["loss_bits"][0] == format_bits(trajectory()[0])
    assert document["first_loss"] == pytest.approx(2.302585, rel=1e-7)
    assert Repeat.from_json(document) == run


def test_a_worker_event_stream_maps_onto_a_run():
    events = [
        {"event": "ready", "rss_bytes": 300, "warmup_seconds": 0.5},
        {"event": "step", "step": 0, "bits": "40135d8e", "seconds": 0.1},
        {"event": "step", "step": 1, "bits": "40135d8d", "seconds": 0.1},
        {"event": "done", "peak_rss_bytes": 900},
    ]
    ready, *steps, done = events
    run = Repeat(
        route="engine",
        repeat=0,
        status="ok",
        loss_bits=tuple(event["bits"] for event in steps),
        step_seconds=tuple(event["seconds"] for event in steps),
        first_step_seconds=ready["warmup_seconds"],
        ready_rss_bytes=ready["rss_bytes"],
        peak_rss_bytes=done["peak_rss_bytes"],
    )
    assert run.loss_bits == (0x40135D8E, 0x40135D8D)
    assert run.training_delta_bytes == 600


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"status": "crashed"}, "status"),
        ({"route": ""}, "route"),
        ({"repeat": -1}, "repeat"),
        ({"step_seconds": [-0.1]}, r"step_seconds\[0\]"),
        ({"loss_bits": ["zz"]}, "bit pattern"),
    ],
)
def test_a_malformed_run_is_refused(changes, message):
    document = {"route": "engine", "repeat": 0, "status": "ok", **changes}
    with pytest.raises(ValueError, match=message):
        Repeat.from_json(document)


def test_routes_keep_the_order_of_their_first_run():
    runs = [make_run("recorded"), make_run("engine"), make_run("recorded", 1)]
    verdict = decide_verdict(runs)
    assert [route.route for route in verdict.routes] == ["recorded", "engine"]
    assert verdict.parity.reference_route == "engine"


def test_a_verdict_needs_a_run():
    with pytest.raises(ValueError, match="at least one run"):
        decide_verdict([])


def test_what_time_rests_on_is_said_once_when_every_route_shares_it():
    from tests.cli.result_examples import example_result, some_routes

    summary = example_result(routes=some_routes(4))["verdict"]["summary"]
    assert summary.count("time on") == 1, summary
    assert summary.count("repeat each") == 1
