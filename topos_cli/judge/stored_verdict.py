"""The verdict a result's drawing reads: the record the grade stored, or, for a result
that lacks it (no stored verdict, or one written before every word render reads was
kept: `JudgedVerdict.keeps_every_word`), the verdict judged again from its repeats with
the result's own settings, as the grade judged them (the bootstrap is seeded, so the
figures are those the grade printed). The one place render's verdict is ever judged."""

from __future__ import annotations

from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.grade_result import GradeResult, JudgedVerdict
from topos_cli.result.verdict_settings import VerdictSettings


def stored_or_judged(result: GradeResult, missing: list[str]) -> JudgedVerdict | None:
    """The result's stored verdict where it keeps every word, else its repeats judged
    again; `None` without repeats, or when judging them fails (said in `missing`: an
    odd older result must not cost the rest of a report)."""
    stored = result.verdict
    if not result.repeats:
        return None
    if stored is not None and stored.keeps_every_word():
        return stored
    load = result.host.load_average
    try:
        verdict = decide_verdict(
            result.repeats,
            settings=VerdictSettings() if stored is None else stored.settings,
            load_average=load[0] if load else None,
            cores=result.host.available_cores,
        )
    except Exception as error:
        missing.append(f"the verdict could not be recomputed ({type(error).__name__}: {error})")
        return None
    return verdict.record()
