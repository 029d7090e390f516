"""The step-time benchmarks' ratio paired by round: a slow spell of the machine that
spans a round of every route cancels in it, where the ratio of the run's medians
follows whichever route the spell happened to fall on more."""

import statistics

from benchmarks.interleaved_rounds import add_ratios, paired_ratio


def test_a_slow_spell_over_whole_rounds_cancels_in_the_paired_ratio():
    # The route takes 0.8x the reference's time in every round. A spell that slows
    # the machine 1.5x spans rounds 0-3, and round 4 up to the route's turn (it ran
    # first there): the route ran slow in five rounds of nine, the reference in four,
    # so the route's run median is a slow step and the reference's a quick one.
    route = [8.0 * 1.5] * 5 + [8.0] * 4
    reference = [10.0 * 1.5] * 4 + [10.0] * 5
    assert statistics.median(route) / statistics.median(reference) == 1.2
    paired = paired_ratio(route, reference)
    assert paired["median"] == 0.8
    assert paired["q1"] == 0.8
    assert paired["rounds"] == 9


def test_add_ratios_puts_the_paired_ratio_beside_the_medians_ratio():
    results = {
        "recorded": {"median_ms": 9.0, "round_medians_ms": [9.0, 18.0, 9.0]},
        "pytorch": {"median_ms": 10.0, "round_medians_ms": [10.0, 20.0, 10.0]},
    }
    add_ratios(results, {"vs_pytorch": "pytorch", "vs_absent": "absent"})
    assert results["recorded"]["vs_pytorch"] == 0.9
    assert results["recorded"]["vs_pytorch_paired"]["median"] == 0.9
    assert results["recorded"]["vs_absent"] is None
    assert results["recorded"]["vs_absent_paired"] is None


def test_one_round_is_not_paired():
    assert paired_ratio([1.0], [2.0]) is None


def test_the_quartiles_are_the_graders_not_a_second_kind():
    # The grader's quartiles interpolate between ranks (type 7); the standard library's
    # default (`statistics.quantiles`, exclusive) would say 1.25 and 3.75 of these.
    from types import SimpleNamespace

    from benchmarks.interleaved_rounds import summarize

    times = [1.0, 2.0, 3.0, 4.0]
    worker = SimpleNamespace(route="engine", times=times, rounds=[times], usage={}, info={})
    figures = summarize([worker], per_step=())["engine"]
    assert (figures["q1_ms"], figures["median_ms"], figures["q3_ms"]) == (1.75, 2.5, 3.25)
    assert paired_ratio([1.0, 2.0, 3.0, 4.0], [1.0] * 4)["q3"] == 3.25
