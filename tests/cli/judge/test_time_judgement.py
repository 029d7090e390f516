"""Tests of the one time judgement: repeats as evidence, disturbed steps, inconclusive,
and the commands that use it (grade's verdict, compare, history) on A/A and A/B data."""

from __future__ import annotations

import math
import random
from datetime import datetime

import msgspec
import pytest

from topos_cli.judge.compare import compare_results
from topos_cli.judge.history import read_history
from topos_cli.judge.statistics import hierarchical_interval, welch_p_value
from topos_cli.judge.step_screening import machine_saturation, screen_side, stolen_time
from topos_cli.judge.time_judgement import (
    DISTURBED_LIMIT,
    FASTER,
    INCONCLUSIVE,
    MIN_REPEATS,
    SLOWER,
    WITHIN,
    judge_time,
)
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.grade_result import GradeResult
from topos_cli.result.repeat import Repeat, RunFacts
from topos_cli.result.result_file import compose_result
from topos_cli.shared.exit_status import ExitStatus, most_severe
from topos_cli.worker import protocol
from topos_cli.worker.route_clock import RouteClock

STEPS = 40


def simulated_runs(
    route: str,
    seconds: float,
    repeats: int,
    generator: random.Random,
    *,
    disturbed_repeat: int | None = None,
    stretch: float = 1.6,
    utilisation: float = 1.9,
    cpu: bool = True,
) -> list[Repeat]:
    """Runs of a route whose repeats wander by 2% and whose steps scatter by 5%, CPU time
    at `utilisation` of the wall (a shard process beside the worker). The disturbed
    repeat's wall times are stretched (it waited for a processor), its CPU times not."""
    runs = []
    for repeat in range(repeats):
        level = seconds * generator.lognormvariate(0.0, 0.02)
        wall = [level * generator.lognormvariate(0.0, 0.05) for _ in range(STEPS)]
        used = [w * utilisation * generator.uniform(0.97, 1.0) for w in wall]
        if repeat == disturbed_repeat:
            wall = [w * stretch for w in wall]
        runs.append(
            Repeat(
                route,
                repeat,
                "ok",
                loss_bits=tuple(0x40000000 + step for step in range(STEPS)),
                step_seconds=tuple(wall),
                step_cpu_seconds=tuple(used) if cpu else (),
                peak_rss_bytes=500 << 20,
                ready_rss_bytes=200 << 20,
            )
        )
    return runs


def result_of(repeats: list[Repeat], created: str = "2026-08-14T10:00:00+00:00") -> GradeResult:
    """A result holding `repeats`, as a grade writes it."""
    return compose_result(
        workload={"name": "mnist", "data": {"source": "synthetic", "fingerprint": "f" * 64}},
        host={"cpu_model": "test CPU"},
        steps=STEPS,
        repeats=repeats,
        verdict=decide_verdict(repeats),
        settings={"threads": None},
        created=datetime.fromisoformat(created),
    )


def grade_runs(seed: int, recorded_scale: float, **disturbance) -> list[Repeat]:
    """A grade of engine and recorded, `recorded_scale` times engine's time."""
    generator = random.Random(seed)
    return simulated_runs("engine", 0.010, 3, generator) + simulated_runs(
        "recorded", 0.010 * recorded_scale, 3, generator, **disturbance
    )


# -- disturbance -------------------------------------------------------------------


def test_a_step_its_cpu_time_cannot_explain_is_disturbed():
    wall = [0.010] * 20
    cpu = [0.019] * 20
    for step in (3, 7, 11):
        wall[step] = 0.016  # waited 6 ms for a processor: utilisation 1.19 of 1.9
    run = Repeat("engine", 0, "ok", step_seconds=wall, step_cpu_seconds=cpu)
    side = screen_side([run], warmup=0)
    assert side.disturbed == 3
    assert side.usable[0].median_seconds == pytest.approx(0.010)
    assert side.cpu_milliseconds == pytest.approx(19.0)


def test_a_step_slower_with_its_cpu_is_not_disturbed():
    # More work (CPU grew with the wall): the code was slower, the machine was not busy.
    wall = [0.010] * 10 + [0.015] * 10
    cpu = [0.019] * 10 + [0.0285] * 10
    run = Repeat("engine", 0, "ok", step_seconds=wall, step_cpu_seconds=cpu)
    assert screen_side([run], warmup=0).disturbed == 0


def test_a_wholly_stretched_repeat_is_caught_by_its_quiet_siblings():
    runs = simulated_runs("engine", 0.010, 3, random.Random(1), disturbed_repeat=2)
    side = screen_side(runs, warmup=1)
    by_repeat = {repeat.repeat: repeat for repeat in side.repeats}
    assert by_repeat[2].disturbed == STEPS - 1 and not by_repeat[2].usable
    assert by_repeat[0].disturbed <= 2 and by_repeat[1].disturbed <= 2


#: The grader's readings around a repeat on 2 cores while another process kept one busy.
BUSY_MACHINE = {
    "elapsed_seconds": 2.0,
    "cores": 2,
    "capacity_seconds": 4.0,
    "idle_seconds": 0.01,
    "steal_seconds": 0.0,
    "others_cpu_seconds": 2.0,
}


def own_core_runs(
    route: str,
    wall: float,
    cpu: float,
    switches: int,
    *,
    repeats: int = 3,
    steps: int = 30,
    machine: dict | None = None,
) -> list[Repeat]:
    """Repeats of a single-threaded route whose steps take `wall` seconds for `cpu` seconds
    of its own CPU time (each within 1%), `switches` preemptions a step, beside the
    machine `machine` (the grader's readings)."""
    generator = random.Random(len(route) + int(wall * 1e6))
    runs = []
    for repeat in range(repeats):
        walls = [wall * generator.uniform(0.995, 1.005) for _ in range(steps)]
        runs.append(
            Repeat(
                route,
                repeat,
                "ok",
                loss_bits=tuple(0x40000000 + step for step in range(steps)),
                step_seconds=tuple(walls),
                step_cpu_seconds=tuple(w * cpu / wall for w in walls),
                step_involuntary_switches=tuple([switches] * steps),
                peak_rss_bytes=500 << 20,
                ready_rss_bytes=200 << 20,
                facts=RunFacts.from_json({"machine": machine} if machine else {}),
            )
        )
    return runs


def test_a_saturated_machine_is_a_note_and_steal_disturbs_the_whole_repeat():
    facts = RunFacts.from_json({"machine": BUSY_MACHINE})
    assert machine_saturation(facts) == "machine saturated, others using 1.0 cores"
    quiet = {**BUSY_MACHINE, "idle_seconds": 1.0}
    assert machine_saturation(RunFacts.from_json({"machine": quiet})) is None
    stolen = {**quiet, "steal_seconds": 0.4}
    assert stolen_time(RunFacts.from_json({"machine": stolen})) == "steal time 10% of the machine"
    assert machine_saturation(RunFacts()) is None and stolen_time(RunFacts()) is None
    # Over a few of /proc/stat's 10 ms ticks the shares are noise: no judgement.
    brief = {**BUSY_MACHINE, "elapsed_seconds": 0.02, "capacity_seconds": 0.04}
    assert machine_saturation(RunFacts.from_json({"machine": brief})) is None
    runs = simulated_runs("engine", 0.010, 3, random.Random(2))
    runs[0] = msgspec.structs.replace(runs[0], facts=RunFacts.from_json({"machine": stolen}))
    side = screen_side(runs, warmup=1)
    assert side.repeats[0].disturbed == STEPS - 1 and side.repeats[0].stolen
    assert "steal time 10% of the machine" in side.evidence


def test_a_route_with_a_core_to_itself_beside_a_busy_machine_is_not_disturbed():
    # Issue 39: "87 of 87 steps disturbed" for 43.07 ms of CPU in 44.55 ms of wall a step,
    # because another process kept the second core busy. Its own clock explains its time.
    busy = own_core_runs("recorded", 0.04455, 0.04307, 1, machine=BUSY_MACHINE)
    side = screen_side(busy, warmup=1)
    assert side.steps == 87 and side.disturbed == 0 and side.evidence is None
    assert side.machine_note == "machine saturated, others using 1.0 cores (3 of 3 repeats)"
    # Against the same code graded on a quiet machine: judged, not inconclusive.
    quiet = own_core_runs("recorded", 0.0445, 0.0431, 0)
    judgement = judge_time(busy, quiet, tolerance=0.10)
    assert judgement.outcome == WITHIN, judgement.reason
    # The grade's own verdict raises no "disturbed" warning for it.
    engine = own_core_runs("engine", 0.04772, 0.04763, 0, machine=BUSY_MACHINE)
    verdict = decide_verdict(engine + busy)
    assert not [warning for warning in verdict.warnings if warning.kind == "disturbed"]
    (note,) = [warning for warning in verdict.warnings if warning.route == "recorded"]
    assert note.kind == "busy machine" and "others using 1.0 cores" in note.message


def test_a_step_far_beyond_its_cpu_with_preemptions_is_disturbed_and_says_so():
    runs = own_core_runs("recorded", 0.010, 0.0097, 0)
    stretched = [0.013 if step % 3 == 0 else seconds for step, seconds in enumerate(
        runs[1].step_seconds)]  # fmt: skip
    switches = [40 if step % 3 == 0 else 0 for step in range(len(stretched))]
    runs[1] = msgspec.structs.replace(
        runs[1], step_seconds=tuple(stretched), step_involuntary_switches=tuple(switches)
    )
    side = screen_side(runs, warmup=1)
    assert side.disturbed == 9
    assert side.evidence == (
        "wall time 30% beyond what their own CPU time explains, 360 involuntary switches"
    )
    verdict = decide_verdict(own_core_runs("engine", 0.010, 0.0097, 0) + runs)
    (warning,) = [warning for warning in verdict.warnings if warning.kind == "disturbed"]
    assert warning.message.startswith(
        "recorded: 9 of 87 steps disturbed: wall time 30% beyond what their own CPU time "
        "explains, 360 involuntary switches"
    ), warning.message
    # The same waits without a preemption are the route's own (a sleep, a read): kept.
    unswitched = msgspec.structs.replace(runs[1], step_involuntary_switches=(0,) * 30)
    assert screen_side([runs[0], unswitched, runs[2]], warmup=1).disturbed == 0
    # ...unless the route has shard processes: its worker waits for them voluntarily, its
    # own switches do not see theirs, and the utilisation alone decides.
    sharded = msgspec.structs.replace(
        unswitched, facts=RunFacts.from_json({"ready": {"shard_processes": {"pids": [4242]}}})
    )
    side = screen_side([runs[0], sharded, runs[2]], warmup=1)
    assert side.disturbed == 9
    assert side.evidence == "wall time 30% beyond what their own CPU time explains"


def test_a_route_that_shared_a_core_in_every_repeat_is_disturbed():
    # Half a processor a step, preempted five times a step, in every repeat: the quiet
    # level is itself low, so only the floor of one processor shows the loss; the
    # machine note adds the context, the reason names the route's own evidence.
    shared = own_core_runs("recorded", 0.020, 0.010, 5, machine=BUSY_MACHINE)
    quiet = own_core_runs("recorded", 0.010, 0.0098, 0)
    judgement = judge_time(shared, quiet, tolerance=0.10)
    assert judgement.outcome == INCONCLUSIVE and judgement.inconclusive_because == "disturbed"
    assert "87 of 87 steps disturbed (wall time 100% beyond what their own CPU time" in (
        judgement.reason
    )
    # A route that sleeps half its step, preempted now and then, is not disturbed.
    sleeper = own_core_runs("recorded", 0.020, 0.010, 1)
    assert screen_side(sleeper, warmup=1).disturbed == 0


# -- the statistics ------------------------------------------------------------------


def test_welch_agrees_with_scipy():
    # scipy.stats.ttest_ind([1.0, 1.1, 0.95, 1.2], [1.3, 1.25, 1.4], equal_var=False)
    assert welch_p_value([1.0, 1.1, 0.95, 1.2], [1.3, 1.25, 1.4]) == pytest.approx(
        0.015754731993630318, rel=1e-9
    )
    assert welch_p_value([1.0], [2.0, 3.0]) is None


def test_the_hierarchical_interval_is_seeded_and_covers_the_ratio():
    generator = random.Random(3)
    new = [[generator.gauss(12, 1) for _ in range(30)] for _ in range(4)]
    old = [[generator.gauss(10, 1) for _ in range(30)] for _ in range(4)]
    first = hierarchical_interval(new, old)
    assert first == hierarchical_interval(new, old)
    ratio, lower, upper = first
    assert lower <= ratio <= upper
    assert lower > 1.1 and upper < 1.3


# -- A/A, A/B, and the old p = 1e-20 ------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_a_a_with_a_disturbed_repeat_is_never_a_change(seed):
    old = result_of(grade_runs(seed, 1.0))
    new_runs = grade_runs(seed + 100, 1.0, disturbed_repeat=seed % 3, stretch=1.6)
    new = result_of(new_runs, created="2026-08-15T10:00:00+00:00")
    comparison = compare_results(old, new)
    assert comparison.regressions == ()
    assert all(change.status != "improvement" for change in comparison.changes)
    assert comparison.exit_status in (ExitStatus.OK, ExitStatus.INCONCLUSIVE)
    # The grade's own verdict of the disturbed result claims neither faster nor slower.
    ratio = decide_verdict(new_runs).route("recorded").speed.ratio
    assert ratio.direction not in ("faster", "slower")


@pytest.mark.parametrize("seed", range(6))
def test_a_a_beside_a_hog_in_history_is_never_marked(seed, tmp_path):
    import json

    folder = tmp_path / "results"
    folder.mkdir()
    quiet = result_of(grade_runs(seed, 1.0))
    busy = result_of(
        grade_runs(seed + 50, 1.0, disturbed_repeat=1, stretch=2.0),
        created="2026-08-15T10:00:00+00:00",
    )
    (folder / "a.json").write_text(json.dumps(quiet.to_json()))
    (folder / "b.json").write_text(json.dumps(busy.to_json()))
    (group,) = read_history([folder]).groups
    for route in ("engine", "recorded"):
        assert group.points[1].significant(route, "ms/step") is None


@pytest.mark.parametrize("seed", range(20))
def test_a_b_twenty_percent_slower_on_quiet_repeats_is_found_every_time(seed):
    generator = random.Random(seed)
    old = simulated_runs("recorded", 0.010, 5, generator)
    new = simulated_runs("recorded", 0.012, 5, generator)
    judgement = judge_time(new, old, tolerance=0.10)
    assert judgement.outcome == SLOWER, judgement.reason
    assert judgement.lower > 1.10
    backwards = judge_time(old, new, tolerance=0.10)
    assert backwards.outcome == FASTER
    comparison = compare_results(result_of(old), result_of(new))
    (time,) = [c for c in comparison.changes if c.figure == "ms/step"]
    assert time.status == "regression"
    assert comparison.exit_status == ExitStatus.REGRESSION


@pytest.mark.parametrize("seed", range(5))
def test_a_b_in_the_grade_verdict_is_called_slower(seed):
    runs = grade_runs(seed, 1.2)
    ratio = decide_verdict(runs).route("recorded").speed.ratio
    assert ratio.direction == "slower"
    assert ratio.phrase.endswith("x slower")


def test_identical_code_over_two_repeats_is_not_tested_and_inconclusive():
    # Once: "regression, p = 1.62e-20", every step taken for an independent sample.
    generator = random.Random(9)
    old = simulated_runs("recorded", 0.010, 2, generator)
    new = simulated_runs("recorded", 0.0106, 2, generator)  # two repeats: one drifted
    comparison = compare_results(result_of(old), result_of(new))
    (time,) = [c for c in comparison.changes if c.figure == "ms/step"]
    assert time.p_value is None
    assert time.status == INCONCLUSIVE
    assert f"a test needs {MIN_REPEATS}" in time.time.reason
    assert comparison.exit_status == ExitStatus.INCONCLUSIVE
    assert "inconclusive" in comparison.summary


def test_too_disturbed_is_inconclusive_with_its_reason():
    generator = random.Random(4)
    old = simulated_runs("recorded", 0.010, 4, generator)
    new = simulated_runs("recorded", 0.013, 4, generator, disturbed_repeat=0)
    new += simulated_runs("recorded", 0.013, 2, generator, disturbed_repeat=0)[:1]
    new[-1] = msgspec.structs.replace(new[-1], repeat=4)
    judgement = judge_time(new, old, tolerance=0.10)
    assert new and judgement.new.disturbed / judgement.new.steps > DISTURBED_LIMIT
    assert judgement.outcome == INCONCLUSIVE
    assert judgement.inconclusive_because == "disturbed"
    assert "disturbed" in judgement.reason


def test_repeats_left_unusable_by_disturbance_are_disturbed_not_thin():
    # Three short repeats a side (8 steps, as a quick grade has), three steps of one
    # repeat disturbed: the side's share of disturbed steps stays under the limit, but
    # that repeat keeps too few calm steps and two usable repeats cannot be tested. The
    # cause is disturbance (grade again elsewhere), not too few repeats.
    generator = random.Random(5)

    def short(repeats: list[Repeat]) -> list[Repeat]:
        return [
            msgspec.structs.replace(
                repeat,
                step_seconds=repeat.step_seconds[:8],
                step_cpu_seconds=repeat.step_cpu_seconds[:8],
                loss_bits=repeat.loss_bits[:8],
            )
            for repeat in repeats
        ]

    old = short(simulated_runs("recorded", 0.010, MIN_REPEATS, generator))
    new = short(simulated_runs("recorded", 0.010, MIN_REPEATS, generator))
    stretched = [
        seconds * (1.6 if step in (1, 2, 3) else 1.0)
        for step, seconds in enumerate(new[0].step_seconds)
    ]
    new[0] = msgspec.structs.replace(new[0], step_seconds=tuple(stretched))
    judgement = judge_time(new, old, tolerance=0.10)
    assert judgement.new.disturbed / judgement.new.steps <= DISTURBED_LIMIT
    assert len(judgement.new.usable) == MIN_REPEATS - 1
    assert judgement.outcome == INCONCLUSIVE
    assert judgement.inconclusive_because == "disturbed", judgement.reason
    assert f"{MIN_REPEATS - 1} usable repeats of {MIN_REPEATS}" in judgement.reason
    # Too few repeats run at all is thin.
    thin = judge_time(new[1:], old, tolerance=0.10)
    assert thin.inconclusive_because == "thin", thin.reason


def test_a_grade_whose_steps_were_too_disturbed_says_inconclusive():
    generator = random.Random(5)
    runs = simulated_runs("engine", 0.010, 3, generator)
    runs += simulated_runs("recorded", 0.010, 3, generator, disturbed_repeat=0)
    runs[-1] = msgspec.structs.replace(runs[-1], step_seconds=runs[-3].step_seconds)
    verdict = decide_verdict(runs)
    # Described, not gated: grade's exit promises finished routes and agreeing losses.
    assert verdict.exit_status == ExitStatus.OK
    assert "recorded: inconclusive (" in verdict.summary
    judgement = verdict.route("recorded").speed.ratio.judgement
    assert judgement.inconclusive_because == "disturbed"
    assert any(warning.kind == "disturbed" for warning in verdict.warnings)
    assert verdict.route("recorded").speed.cpu_milliseconds_per_step is not None


def test_old_results_without_cpu_times_are_judged_and_say_so():
    generator = random.Random(6)
    old = simulated_runs("recorded", 0.010, 3, generator, cpu=False)
    new = simulated_runs("recorded", 0.010, 3, generator, cpu=False)
    judgement = judge_time(new, old, tolerance=0.10)
    assert judgement.outcome == WITHIN
    assert judgement.new.disturbed is None
    assert "disturbance unknown" in judgement.new.describe()
    # ...unless the grade warned of a busy machine: nothing then rules the load out.
    busy = judge_time(new, old, tolerance=0.10, new_busy="load average 3.1 on 2 cores")
    assert busy.outcome == INCONCLUSIVE and busy.inconclusive_because == "disturbed"
    # A stored run without the new fields loads.
    data = old[0].to_json()
    del data["step_cpu_seconds"], data["step_involuntary_switches"]
    assert Repeat.from_json(data).step_cpu_seconds == ()


def test_the_judgement_is_json_ready():
    import json

    generator = random.Random(8)
    judgement = judge_time(
        simulated_runs("r", 0.01, 3, generator),
        simulated_runs("r", 0.01, 3, generator),
        tolerance=0.1,
    )
    data = json.loads(json.dumps(judgement.record().to_json(), allow_nan=False))
    assert data["repeats_text"] == "3 repeats each"
    assert data["new"]["usable_repeats"] == 3 and "kept_seconds" not in data["new"]["repeats"][0]


# -- exit statuses -------------------------------------------------------------------


def test_inconclusive_never_outranks_a_regression_or_hides_a_failure():
    assert ExitStatus.INCONCLUSIVE == 5
    assert most_severe([ExitStatus.INCONCLUSIVE, ExitStatus.REGRESSION]) == ExitStatus.REGRESSION
    assert most_severe([ExitStatus.INCONCLUSIVE, ExitStatus.ROUTE_FAILED]) == 1
    assert most_severe([ExitStatus.INCONCLUSIVE, ExitStatus.PARITY_BROKEN]) == 3
    assert most_severe([ExitStatus.INCONCLUSIVE, None]) == ExitStatus.INCONCLUSIVE
    assert most_severe([ExitStatus.INCONCLUSIVE, ExitStatus.INTERRUPTED]) == 130


# -- the worker's side ---------------------------------------------------------------


def test_an_old_workers_step_event_decodes_with_unknown_cpu():
    event = protocol.decode('{"event": "step", "step": 0, "loss": 1.0, "bits": 1, "seconds": 0.1}')
    assert event.cpu_seconds is None and event.involuntary_switches is None
    line = protocol.encode(protocol.Step(1, 1.0, 1, 0.1, 0.19, 3))
    assert protocol.decode(line) == protocol.Step(1, 1.0, 1, 0.1, 0.19, 3)
    # A field of the wrong type makes the line no event (stray output), as for any field.
    bad = line.replace("0.19", '"x"')
    assert protocol.decode(bad) is None


def test_the_route_clock_counts_this_process_and_tolerates_a_vanished_child():
    clock = RouteClock(lambda: [])
    clock.start()
    total = sum(math.sqrt(i) for i in range(200_000))
    cpu, switches = clock.step()
    assert total > 0 and cpu is not None and cpu > 0
    assert switches is None or switches >= 0
    gone = RouteClock(lambda: [2**22 + 12345])  # no such process
    gone.start()
    assert gone.step()[0] is None
