"""`grade --repeat auto`: after each round of repeats, judge every route's time the way
the verdict will (`time_judgement`, through the verdict, `--baseline`'s comparison and
`--against`'s), and plan another round until each is decisive or the budget would run
out (`report.repeat_stopping`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from topos_cli.harness.grade_preparation import PreparedGrade, round_of_requests
from topos_cli.harness.route_runner import GatheredRepeats
from topos_cli.harness.worker_request import WorkerRequest
from topos_cli.judge.against import compare_checkouts, is_against
from topos_cli.judge.repeat_stopping import RepeatStop, stop_repeating
from topos_cli.judge.time_judgement import TimeJudgement, judge_time
from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat


class RepeatsUntilDecisive:
    """The continuation `run_routes` calls when its planned runs are done: the next round
    of requests, or none once `stop_repeating` says why to stop (kept in `stop`).

    `against` names `--against`'s checkout (its runs are judged against this one's);
    `clock` is the monotonic clock the budget is kept by (a test may pass its own)."""

    def __init__(
        self,
        preparation: PreparedGrade,
        against: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.preparation = preparation
        self.against = against
        self.clock = clock
        self.started = clock()
        self.round_started: float | None = None
        self.longest_round = 0.0
        self.stop: RepeatStop | None = None

    def __call__(self, gathered: GatheredRepeats) -> Sequence[WorkerRequest]:
        """The next round's requests, or `[]` to stop (and `stop` says why)."""
        budget = self.preparation.options.repeat_budget
        if budget is None or self.stop is not None:
            return []
        now = self.clock()
        repeats = 1 + max(request.repeat for request in self.preparation.requests)
        if self.round_started is None:
            # The first rounds ran as one stretch: each took its share of it.
            self.longest_round = (now - self.started) / repeats
        else:
            self.longest_round = max(self.longest_round, now - self.round_started)
        self.stop = stop_repeating(
            self.judgements(gathered.results),
            repeats=repeats,
            elapsed_seconds=now - self.started,
            round_seconds=self.longest_round,
            budget_seconds=budget,
            failed=any(run.status != "ok" for run in gathered.results),
        )
        if self.stop is not None:
            return []
        self.round_started = now
        return round_of_requests(self.preparation, repeats)

    def judgements(self, repeats: Sequence[Repeat]) -> dict[str, TimeJudgement]:
        """Every time judgement the grade will render, by name: this checkout against
        `--against`'s, against `--baseline`, or (with neither) each route against the
        verdict's reference."""
        preparation = self.preparation
        own = [repeat for repeat in repeats if not is_against(repeat)]
        judged: dict[str, TimeJudgement] = {}
        if self.against is not None:
            other = [repeat for repeat in repeats if is_against(repeat)]
            comparison = compare_checkouts(
                own, other, other_name=self.against, settings=preparation.compare_settings
            )
            judged.update((route.route, route.time) for route in comparison.routes)
        if preparation.baseline is not None:
            settings = preparation.compare_settings
            baseline = preparation.baseline
            old_warmup = 1 if baseline.verdict is None else baseline.verdict.settings.warmup_steps
            for route in preparation.options.routes:
                old = [run for run in baseline.repeats if run.route == route and run.status == "ok"]
                if not old:
                    continue
                judged[f"{route} against the baseline"] = judge_time(
                    [run for run in own if run.route == route and run.status == "ok"],
                    old,
                    tolerance=settings.time_tolerance,
                    significance_level=settings.significance_level,
                    new_warmup=preparation.verdict_settings.warmup_steps,
                    old_warmup=old_warmup,
                )
        if self.against is None and preparation.baseline is None and own:
            verdict = decide_verdict(own, settings=preparation.verdict_settings)
            for route in verdict.routes:
                ratio = None if route.speed is None else route.speed.ratio
                if ratio is not None and ratio.judgement is not None:
                    judged[route.route] = ratio.judgement
        return judged
