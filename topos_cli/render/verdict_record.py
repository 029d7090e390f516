"""The verdict render draws: the typed record a result keeps (`JudgedVerdict`), never
the judge's own objects. Given a judge's verdict (anything that makes its record, as a
test that has just judged some repeats holds), render draws the record it makes."""

from __future__ import annotations

from typing import Protocol

from topos_cli.result.grade_result import JudgedVerdict


class MakesARecord(Protocol):
    """What makes the record render reads: the judge's `Verdict` does."""

    def record(self) -> JudgedVerdict:
        """The verdict as a result keeps it."""
        ...


#: What every drawing of a verdict takes.
Drawable = JudgedVerdict | MakesARecord


def verdict_record(verdict: Drawable) -> JudgedVerdict:
    """`verdict` itself when it is a record, else the record it makes."""
    return verdict if isinstance(verdict, JudgedVerdict) else verdict.record()
