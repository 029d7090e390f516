"""CountChangeRecord: one route's counted work judged between two sides, as a result keeps it."""

from __future__ import annotations

from topos_cli.result.result_part import Ratio, ResultPart


class CountChangeRecord(ResultPart, forbid_unknown_fields=False):
    """`count_judgement.CountChange`: the status (`regression`, `improvement`, `no change`,
    `not judged`), both sides' instructions per step, their ratio, the tolerance, why it was
    not judged, and the sentence a person reads."""

    route: str
    status: str
    old_instructions_per_step: Ratio | None = None
    new_instructions_per_step: Ratio | None = None
    ratio: Ratio | None = None
    tolerance: Ratio = 0.01
    reason: str | None = None
    description: str = ""
