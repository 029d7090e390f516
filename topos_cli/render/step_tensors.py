"""A native route's memory, its step tensors (`topos.native.step_tensors`): the exact
figure its framework gives, where RSS sees only the heap's growth. Whether a verdict shows
them, what their column is named, and how a cell of them reads, for every table and
export that shows them beside (or in place of) the training Δ."""

from __future__ import annotations

from topos_cli.result.grade_result import JudgedVerdict
from topos_cli.shared.units import DASH, MEBIBYTE

#: A native verdict's memory column in the training Δ's place: its routes' step tensors
#: (`topos.native.step_tensors`), the exact figure, where RSS sees only the heap's growth.
STEP_TENSOR_COLUMN = ("step MiB", "step tensors MiB")


def shows_step_tensors(verdict: JudgedVerdict) -> bool:
    """Whether the verdict's routes are a native step's, with step tensors measured: its
    memory column is then theirs, not the training Δ."""
    return any(
        route.memory is not None and route.memory.step_tensor_bytes_or_none is not None
        for route in verdict.routes
    )


def step_tensor_cell(count: int | None) -> str:
    """Step tensors in MiB: two decimals below 10 MiB (a small model's are a fraction)."""
    if count is None:
        return DASH
    mebibytes = count / MEBIBYTE
    return f"{mebibytes:.2f}" if mebibytes < 10 else f"{mebibytes:.1f}"
