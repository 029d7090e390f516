"""The remat route on the command line: graded beside engine and recorded (its budget,
planned bytes, recomputations and extra FLOPs in the JSON, judged against recorded in
the verdict), a budget below the floor refused with exit 2, `describe --budget`, and
`topos frontier` with its table, its picture and parity across every point."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest

from tests.cli.grading import TINY, grade_tiny, one_line_error, succeeded, topos
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat


def test_three_routes_grade_bit_identically_and_remat_is_read_against_recorded(tmp_path):
    completed, result = grade_tiny(
        "tiny", tmp_path, "--routes", "engine,recorded,remat", "--budget", "floor", steps=4
    )
    assert completed.returncode == 0, completed.stderr
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    assert [route["route"] for route in result["verdict"]["routes"]] == [
        "engine",
        "recorded",
        "remat",
    ]
    remat = result["routes"]["remat"]["remat"]
    for key in ("budget_bytes", "planned_bytes", "floor_bytes", "recomputations", "extra_flops"):
        assert isinstance(remat[key], int), key
    assert remat["planned_bytes"] <= remat["budget_bytes"] == remat["floor_bytes"]
    assert result["settings"]["budget"] == "floor"
    (pairing,) = result["verdict"]["pairings"]
    assert (pairing["route"], pairing["against"]) == ("remat", "recorded")
    assert "(against recorded: " in result["verdict"]["summary"]
    # The plans' part of the step's predicted memory is what the budget bounds.
    volume = result["routes"]["remat"]["live_volume"]
    assert volume["plan_training_bytes"] == remat["planned_bytes"]
    assert any(entry["route"] == "remat" for entry in result["memory_prediction"])
    assert "remat: budget " in completed.stdout and "recomputed (+" in completed.stdout


def test_a_budget_below_the_floor_is_exit_2_naming_the_floor(tmp_path):
    completed, _ = grade_tiny("tiny", tmp_path, "--routes", "remat", "--budget", "64B", steps=2)
    assert completed.returncode == 2, completed.stderr
    line = one_line_error(completed)
    assert "below this plan's floor of " in line and " bytes" in line


def test_a_malformed_budget_is_refused_before_any_worker(tmp_path):
    completed = topos("grade", "--routes", "remat", "--budget", "half", cwd=tmp_path)
    assert completed.returncode == 2
    assert "--budget 'half'" in one_line_error(completed)
    assert "started" not in completed.stderr
    assert not (tmp_path / "results").exists()


def test_describe_prints_the_remat_summary(tmp_path):
    completed = topos(
        "describe",
        "--route",
        "remat",
        "--workload",
        TINY + "tiny",
        "--budget",
        "floor",
        "--summary",
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[1].startswith("plan: forward; ") and " recomputed (+" in lines[1]
    assert lines[2].startswith("live volume: peak ")
    assert lines[3].startswith("budget: ") and ", floor " in lines[3]


@pytest.mark.parametrize("workload", [TINY + "sharded", "cifar10"])
def test_describe_speaks_in_the_routes_terms_and_takes_its_floor_back(tmp_path, workload):
    # A workload of two shards (a user's two-layer perceptron, and a built-in): each shard
    # runs a replica of one plan, and a budget in bytes is the whole route's.
    def describe(budget):
        return topos(
            "describe",
            "--route",
            "remat",
            "--workload",
            workload,
            "--budget",
            budget,
            "--summary",
            cwd=tmp_path,
        )

    completed = describe("floor")
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert any(line.startswith("sharded: 2 shards of ") for line in lines)
    assert any(line.startswith("budget per shard: ") for line in lines)
    assert all(line.endswith("(each shard's plan)") for line in lines if line.startswith("plan:"))
    (route,) = [line for line in lines if line.startswith("budget: ")]
    assert "for the route (2 shards' plans together)" in route
    floor = int(route.split(", floor ")[1].split(",")[0])
    (shard,) = [line for line in lines if line.startswith("budget per shard: ")]
    assert floor == 2 * int(shard.split(", floor ")[1].split(",")[0])
    # The floor it printed, typed back, is the floor's plan.
    again = describe(f"{floor}B")
    assert again.returncode == 0, again.stderr
    assert route.split(", planned ")[1] in again.stdout
    # One byte less is refused, in the route's bytes as typed.
    refused = describe(f"{floor - 1}B")
    assert refused.returncode == 2
    assert f"budget {floor - 1} bytes is below this route's floor of {floor}" in one_line_error(
        refused
    )


def test_the_frontier_draws_every_point_and_checks_parity_across_them(tmp_path):
    completed, result = succeeded(
        "frontier",
        "--workload",
        TINY + "tiny",
        "--budgets",
        "100%,1B,floor",
        "--steps",
        "3",
        cwd=tmp_path,
        timeout=120.0,
        name="frontier.json",
    )
    # The tiny perceptron's floor is recorded's own plan: 100% and floor are one point.
    assert result["frontier"]["points"] == ["engine", "recorded", "remat@100%=floor"]
    assert result["frontier"]["same_plans"] == [["100%", "floor"]]
    (refused,) = result["frontier"]["refused"]
    assert refused["point"] == "remat@1B" and "floor of" in refused["why"]
    assert result["verdict"]["parity"]["status"] == "bit-identical"
    assert result["verdict"]["parity"]["runs"] == 3
    table = completed.stdout.splitlines()
    assert table[0].split()[:2] == ["point", "budget"]
    assert any(line.startswith("remat@1B") and "below the floor" in line for line in table)
    # Each point's lowering, in the table and the progress line, and the part of the step
    # the budget does not bound, named once.
    assert "lowering s" in table[0]
    assert any(line.startswith("training Δ holds, beside each remat point") for line in table)
    assert "remat@100%=floor: ready after " in completed.stderr
    assert "remat@100%=floor: one plan (the same schedule into as many bytes), graded once" in (
        completed.stdout
    )
    assert "predicted Δ MiB" in table[0]
    assert "(lowering " in completed.stderr
    picture = ElementTree.parse(tmp_path / "frontier.svg").getroot()
    labels = [element.text for element in picture.iter("{http://www.w3.org/2000/svg}text")]
    assert {"engine", "recorded", "remat@100%=floor"} <= set(labels)


def _run(route: str, bits: list[int], seconds: float, delta: int) -> list[Repeat]:
    """Three repeats of a route (time is judged on repeats), a little apart."""
    return [
        Repeat(
            route,
            repeat,
            "ok",
            tuple(bits),
            tuple(seconds * (1 + 0.002 * repeat + 0.001 * (step % 2)) for step in range(8)),
            seconds,
            10**8,
            10**8 + delta,
            delta,
        )
        for repeat in range(3)
    ]


def test_the_verdict_reads_remat_against_the_reference_and_against_recorded():
    bits = [0x40000000, 0x3F800000, 0x3F000000, 0x3E800000] * 2
    verdict = decide_verdict(
        _run("engine", bits, 0.020, 40 * 2**20)
        + _run("recorded", bits, 0.016, 20 * 2**20)
        + _run("remat", bits, 0.018, 10 * 2**20)
    )
    (pairing,) = verdict.pairings
    assert pairing.training_delta_ratio == 0.5
    assert pairing.speed.direction == "slower"
    assert (
        "remat: " in verdict.summary
        and "the memory of engine (against recorded: " in verdict.summary
        and "time on 3 repeats each" in verdict.summary  # said once, for every route
    )
    assert "Δ 0.50x" in verdict.summary
    assert verdict.record().pairings[0].against == "recorded"
