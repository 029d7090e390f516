"""The time evidence of one side of a judgement, as a verdict keeps it (`step_screening`):
each repeat's screened steps, and the side's figures."""

from __future__ import annotations

import msgspec

from topos_cli.result.result_part import Count, Ratio, ResultPart, Seconds


class RepeatEvidenceRecord(ResultPart, forbid_unknown_fields=False):
    """One repeat's measured steps after screening (`step_screening.RepeatEvidence`; its
    step times are in the run, not here)."""

    repeat: Count
    steps: Count
    disturbed: Count | None = None
    median_seconds: Seconds | None = None
    cpu_median_seconds: Seconds | None = None
    usable: bool = False
    machine: str | None = None
    others_cores: Ratio | None = None
    all_median_seconds: Seconds | None = None
    stolen: str | None = None
    disturbed_wall_seconds: Seconds = 0.0
    explained_seconds: Seconds = 0.0
    disturbed_switches: Count | None = None


class SideEvidenceRecord(ResultPart, forbid_unknown_fields=False):
    """A route's evidence on one side of a judgement: its repeats, and what they add up to
    (`step_screening.SideEvidence` and its derived figures)."""

    repeats: list[RepeatEvidenceRecord] = msgspec.field(default_factory=list)
    usable_repeats: Count = 0
    steps: Count = 0
    disturbed_steps: Count | None = None
    disturbance_evidence: str | None = None
    machine_note: str | None = None
    disturbance_known: bool = False
    busy: str | None = None
    milliseconds_per_step: Ratio | None = None
    cpu_milliseconds_per_step: Ratio | None = None
