"""NativeAgreementRecord: how a compiled native route follows its reference, as kept."""

from __future__ import annotations

from topos_cli.result.judged_figure import Figure
from topos_cli.result.result_part import Count, Ratio, ResultPart


class NativeAgreementRecord(ResultPart, forbid_unknown_fields=False):
    """A compiled native route's agreement (`native_agreement.NativeAgreement`): status,
    tolerance, steps, the largest relative loss difference and the first step beyond, its
    cause, step 0's largest gradient error, whether its random state differed, and the
    summary's sentence and the table's cell."""

    route: str
    reference: str
    status: str
    tolerance: Ratio = 0.0
    steps: Count = 0
    largest_difference: Figure | None = None
    first_beyond: Count | None = None
    cause: str | None = None
    bit_identical: bool = False
    largest_gradient_error: Figure | None = None
    worst_gradient: str | None = None
    gradient_scaled: bool = False
    #: Whether the route's random state differed from the reference's (its own dropout
    #: masks), the cause named where it agrees yet its step 0 gradients differ.
    random_state_differs: bool = False
    description: str = ""
    #: The parity column's words (`agrees (≤ 1e-05)`), kept so render reads them; empty
    #: in a result written before they were kept.
    cell: str = ""
