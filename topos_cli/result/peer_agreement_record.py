"""PeerAgreementRecord: how a peer route (torch, jax) follows topos, as a verdict keeps it."""

from __future__ import annotations

import msgspec

from topos_cli.result.judged_figure import Figure
from topos_cli.result.result_part import Count, Ratio, ResultPart, Seconds


class PeerAgreementRecord(ResultPart, forbid_unknown_fields=False):
    """A peer's agreement (`agreement.PeerAgreement`): its status (`agrees`, `diverges`,
    `not checked`), step 0's and the trajectory's figures (relative loss differences,
    infinite where a loss is NaN), the tolerances, the summary's sentence and the table's cell."""

    route: str
    status: str
    reference: str | None = None
    steps: Count = 0
    step0_relative_loss_difference: Figure | None = None
    largest_relative_loss_difference: Figure | None = None
    largest_step: Count | None = None
    trajectory: str = "none"
    trajectory_reason: str | None = None
    judged_through_step: Count | None = None
    later_largest_relative_loss_difference: Figure | None = None
    later_largest_step: Count | None = None
    later_largest_drift: Figure | None = None
    final_drift: Figure | None = None
    drift_factor: Ratio = 10.0
    float64_relative_loss_difference: Figure | None = None
    float64_seconds: Seconds | None = None
    first_divergence_step: Count | None = None
    first_divergence: Figure | None = None
    first_divergence_bound: Figure | None = None
    loss_tolerance: Ratio = 0.0
    gradient_errors: dict[str, Figure] = msgspec.field(default_factory=dict)
    gradient_tolerance: Ratio = 0.0
    gradients_beyond: list[str] = msgspec.field(default_factory=list)
    description: str = ""
    #: The parity column's words (`agrees: step 0 to 1.3e-06, ...`), kept so render reads
    #: them; empty in a result written before they were kept.
    cell: str = ""
