"""The result of a grade as the result file holds it: what the runs gathered, composed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from topos_cli.harness.grade_preparation import PreparedGrade
from topos_cli.harness.monitor import SAMPLE_INTERVAL_SECONDS
from topos_cli.harness.route_runner import GatheredRepeats
from topos_cli.harness.worker_environment import environment_facts
from topos_cli.judge.compare import Comparison
from topos_cli.judge.verdict import Verdict
from topos_cli.result.data_facts import DataFacts
from topos_cli.result.grade_result import (
    AgainstFacts,
    BaselineComparison,
    GradeResult,
    GradeSettings,
    HostFacts,
    Interruption,
    MemoryPrediction,
    RouteFacts,
    WorkloadFacts,
)
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import compose_result
from topos_cli.result.worker_facts import LiveVolume, ReadyFacts, StepMemoryFacts

#: How close the measured training delta should come to the predicted one: within
#: this fraction of the measured delta, or within `PREDICTION_FLOOR_BYTES` where that
#: is more (a small delta is at the mercy of the allocator's own pages).
PREDICTION_TOLERANCE = 0.05
PREDICTION_FLOOR_BYTES = 256 * 1024

#: What the result file says about how memory was measured (README has the long story).
MEMORY_METHOD = {
    "ready": "data loaded (of an image split fed by the default feeds, only the images the "
    "steps read), plan lowered, the warm-up steps of the route (--warmup, one by default) run and "
    "thrown away, "
    "the plans' arenas freed and garbage collected",
    "peak": "the larger of VmHWM at the end of the measured steps, after resetting it at "
    "ready (writing 5 to /proc/self/clear_refs), and VmRSS read at each step's peak "
    "(VmHWM lags per-CPU counters); where /proc is missing (macOS) the largest of psutil's "
    "resident set read at each step's peak and sampled every few ms, and ru_maxrss when it "
    "rose during the steps: sampled, not exact (settings.memory_measurement says which)",
    "training_delta": "peak minus VmRSS at ready",
    "cross_check": "ru_maxrss from os.wait4, which includes start-up and shutdown",
    "shard_processes": "a workload whose shards run in forked processes counts each child's "
    "private memory (USS, Private_Clean + Private_Dirty of /proc/PID/smaps_rollup) on top "
    "of the worker's: at ready, and the largest read at the end of its computations",
}


def _first_ready(results: Sequence[Repeat], route: str | None = None) -> ReadyFacts | None:
    """The `ready` facts of the first run (of `route`, if given) that reached ready."""
    for result in results:
        ready = result.facts.ready
        if ready is not None and (route is None or result.route == route):
            return ready
    return None


def route_facts(results: Sequence[Repeat], routes: Sequence[str]) -> dict[str, RouteFacts]:
    """Per route, what its worker said at ready: plan summary, live volume, node counts."""
    facts = {}
    for route in routes:
        ready = _first_ready(results, route)
        if ready is None:
            continue
        facts[route] = RouteFacts(
            posture=ready.posture,
            shards=ready.shards,
            plan=list(ready.plan),
            live_volume=ready.live_volume,
            remat=ready.remat,
            forward_nodes=ready.forward_nodes,
            gradient_nodes=ready.gradient_nodes,
            lower_seconds=ready.lower_seconds,
            planning_seconds=ready.planning_seconds,
            warm_up_seconds=ready.warm_up_seconds,
            high_water_source=ready.high_water_source,
            step_memory=ready.step_memory,
        )
    return facts


def memory_predictions(
    route_facts: Mapping[str, RouteFacts], verdict: Verdict | None
) -> list[MemoryPrediction]:
    """Per route, the predicted training delta (the whole step's parts, see
    `topos.training.step_memory`; the plan's figure, or its live volume, from workers
    that do not say) beside the measured one, and how much of it the prediction does
    not explain, in bytes. A native route has none (`posture` native)."""
    predictions = []
    for route, facts in route_facts.items():
        if facts.posture == "native":
            continue  # a PyTorch or JAX step: no plan to predict its memory from
        volume = facts.live_volume or LiveVolume()
        live = volume.peak_bytes
        predicted = volume.predicted_training_bytes
        predicted = live if predicted is None else predicted
        step = facts.step_memory or StepMemoryFacts()
        measured = None
        if verdict is not None:
            try:
                memory = verdict.route(route).memory
            except KeyError:
                memory = None
            measured = None if memory is None else memory.training_delta_bytes
        ratio = measured / predicted if measured is not None and predicted else None
        unexplained = None if measured is None or predicted is None else measured - predicted
        within = None
        if measured is not None and unexplained is not None:
            allowed = max(PREDICTION_TOLERANCE * measured, PREDICTION_FLOOR_BYTES)
            within = abs(unexplained) <= allowed
        predictions.append(
            MemoryPrediction(
                route=route,
                predicted_live_bytes=live,
                predicted_training_bytes=predicted,
                parts=dict(step.parts) if facts.step_memory is not None else None,
                moment=step.moment,
                measured_training_delta_bytes=measured,
                unexplained_bytes=unexplained,
                ratio=ratio,
                within_tolerance=within,
                tolerance=PREDICTION_TOLERANCE,
                tolerance_floor_bytes=PREDICTION_FLOOR_BYTES,
            )
        )
    return predictions


def _data_facts(preparation: PreparedGrade, results: Sequence[Repeat]) -> DataFacts:
    """Which data the grade used: what was asked for, and what the worker loaded."""
    ready = _first_ready(results)
    loaded = ready.dataset if ready is not None and ready.dataset is not None else DataFacts()
    # The worker's record, with what the grade was asked for: the same record.
    return msgspec.structs.replace(loaded, requested=preparation.data or "synthetic")


def memory_measurement(repeats: Sequence[Repeat]) -> str | None:
    """`exact` when every completed run's peak is VmHWM, `sampled` when one's was sampled
    (no /proc), None when no run completed."""
    sources = {repeat.facts.peak_source for repeat in repeats if repeat.status == "ok"}
    if not sources:
        return None
    return "exact" if sources == {"VmHWM"} else "sampled"


def _rounds(preparation: PreparedGrade) -> int:
    """How many rounds of repeats a grade planned (`--repeat auto` adds rounds)."""
    return 1 + max((request.repeat for request in preparation.requests), default=0)


def compose_grade_result(
    preparation: PreparedGrade,
    gathered: GatheredRepeats,
    host: HostFacts,
    verdict: Verdict | None,
    comparison: Comparison | None,
    exit_status: int,
    against: AgainstFacts | None = None,
    other_repeats: Sequence[Repeat] = (),
) -> GradeResult:
    """The result of a grade: `compose_result`'s parts, plus what a grade adds; with
    `--against`, the other checkout's runs (in `against`) and the comparison with it,
    apart from this checkout's repeats."""
    options = preparation.options
    ready = _first_ready(gathered.results)
    host = msgspec.structs.replace(
        host, numerics=None if ready is None else ready.numerics, threads=options.threads
    )
    workload = WorkloadFacts(name=options.workload, data=_data_facts(preparation, gathered.results))
    settings = GradeSettings(
        routes=list(options.routes),
        repeat=options.repeat if options.repeat_budget is None else _rounds(preparation),
        repeat_budget_seconds=options.repeat_budget,
        repeat_stop=gathered.repeat_stop,
        order=[(request.label, request.repeat) for request in preparation.requests],
        threads=options.threads,
        timeout_seconds=options.timeout,
        data=preparation.data or "synthetic",
        environment=environment_facts(preparation.environment),
        sample_interval_seconds=SAMPLE_INTERVAL_SECONDS,
        memory_method=MEMORY_METHOD,
        memory_measurement=memory_measurement(gathered.results),
        tolerance=preparation.compare_settings,
        baseline=options.baseline,
        budget=options.budget,
        warmup_steps=options.warmup,
    )
    result = compose_result(
        workload=workload,
        host=host,
        steps=options.steps,
        repeats=gathered.results,
        verdict=verdict,
        settings=settings,
        created=preparation.started,
    )
    if gathered.interrupted_by is not None:
        status = "interrupted"
    elif gathered.usage_error is not None:
        status = "error"
    else:
        status = "complete"
    facts_by_route = route_facts(gathered.results, options.routes)
    ran = {(result.route, result.repeat) for result in (*gathered.results, *other_repeats)}
    return msgspec.structs.replace(
        result,
        project=preparation.project,
        status=status,
        exit_status=int(exit_status),
        error=gathered.usage_error,
        interrupted=None
        if gathered.interrupted_by is None
        else Interruption(
            signal=gathered.interrupted_by,
            not_run=[
                (request.label, request.repeat)
                for request in preparation.requests
                if (request.label, request.repeat) not in ran
            ],
        ),
        routes=facts_by_route,
        counts=list(gathered.counts) if "instructions" in options.measure else None,
        memory_prediction=memory_predictions(facts_by_route, verdict),
        baseline=None
        if comparison is None
        else BaselineComparison(path=options.baseline, comparison=comparison.record()),
        against=None
        if against is None
        else msgspec.structs.replace(against, repeats=list(other_repeats)),
    )
