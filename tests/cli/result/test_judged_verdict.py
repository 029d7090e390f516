"""The judged verdict is typed records of the result schema: it round-trips through a
result file to equal records, and a verdict field of the wrong type is refused in one
line naming it (a strict read), or left out with a note (a lenient one)."""

from __future__ import annotations

import json

import pytest

from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.float_bits import float32_bits
from topos_cli.result.grade_result import JudgedVerdict
from topos_cli.result.lenient_result import interpret_result
from topos_cli.result.parity_record import ParityRecord
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result, dumps, read_result
from topos_cli.result.route_verdict_record import RouteVerdictRecord
from topos_cli.shared.errors import ResultFileError

MEBIBYTE = 1024 * 1024


def _run(route: str, repeat: int, bits: list[int], status: str = "ok") -> Repeat:
    """A run of 8 steps with steady times that vary a little by repeat and step."""
    seconds = tuple(0.01 * (1.0 + 0.03 * repeat + 0.01 * (step % 3)) for step in range(len(bits)))
    return Repeat(
        route,
        repeat,
        status,
        tuple(bits),
        seconds,
        peak_rss_bytes=(300 + repeat) * MEBIBYTE,
        ready_rss_bytes=200 * MEBIBYTE,
        detail="exit status 1" if status != "ok" else None,
    )


def _runs() -> list[Repeat]:
    """Engine and remat three times each, recorded parting at step 5 with an infinite
    loss, and a failed run: every part of a verdict (divergence, pairing, failure)."""
    good = [float32_bits(2.3 - 0.01 * step) for step in range(8)]
    parted = [*good[:5], 0x7F80_0000, *good[6:]]
    runs = []
    for repeat in range(3):
        runs += [_run("engine", repeat, good), _run("recorded", repeat, parted)]
        runs.append(_run("remat", repeat, good))
    runs.append(_run("remat", 3, good[:4], status="failed"))
    return runs


def _result_json() -> dict:
    runs = _runs()
    result = compose_result(
        workload={"name": "cifar10"}, host={}, steps=8, repeats=runs, verdict=decide_verdict(runs)
    )
    return json.loads(dumps(result))


def test_a_judged_verdict_round_trips_to_equal_records():
    verdict = decide_verdict(_runs())
    judged = verdict.record()
    assert isinstance(judged.parity, ParityRecord)
    assert all(isinstance(route, RouteVerdictRecord) for route in judged.routes)
    assert judged.parity.divergence.other.loss == "inf"
    assert judged.pairings and judged.routes[2].failures
    read = read_result(_result_json(), "test.json")
    assert read.verdict == judged
    assert JudgedVerdict.from_json(judged.to_json()) == judged


@pytest.mark.parametrize(
    ("spoil", "field"),
    [
        (lambda verdict: verdict["parity"].update(steps="many"), "$.verdict.parity.steps"),
        (
            lambda verdict: verdict["routes"][1]["speed"]["milliseconds_per_step"].update(
                median=[1]
            ),
            "$.verdict.routes[1].speed.milliseconds_per_step.median",
        ),
        (lambda verdict: verdict["pairings"][0].update(route=7), "$.verdict.pairings[0].route"),
    ],
)
def test_a_verdict_field_of_the_wrong_type_is_refused_in_one_line_naming_it(spoil, field):
    data = _result_json()
    spoil(data["verdict"])
    with pytest.raises(ResultFileError) as raised:
        read_result(data, "spoiled.json")
    text = str(raised.value)
    assert "\n" not in text and text.startswith("spoiled.json")
    assert f"`{field}`" in text
    lenient = interpret_result(data, "spoiled.json")
    assert lenient.result.verdict is None
    assert any(field in note for note in lenient.missing)


def test_a_verdict_of_an_earlier_or_later_topos_still_reads():
    data = _result_json()
    verdict = data["verdict"]
    verdict["parity"]["added_by_a_later_topos"] = {"anything": 1}
    del verdict["routes"][0]["speed"]["machine_note"]
    del verdict["pairings"][0]["training_delta_ratio"]
    read = read_result(data, "old.json").verdict
    assert read.routes[0].speed.machine_note is None
    assert read.pairings[0].training_delta_ratio is None
    assert read.parity.status == "broken"
