"""Recording a workload in a chosen dtype: float32 to train, float64 for `topos check`.

A workload opts in to float64 by giving its `record` function a `dtype` argument
(default float32) and making every tensor it records in that dtype
(`Tensor.filled(..., dtype=dtype)`, `init.normal(...)(shape).astype(dtype)`).
A workload whose `record` takes no `dtype` still trains; it cannot be checked.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from topos.graph import Tape
from topos.training.workload import Recording, Workload


class DtypeNotSupportedError(ValueError):
    """A workload that cannot record in the dtype asked for; the message says how to fix it."""


def accepts_dtype(workload: Workload) -> bool:
    """Whether the workload's `record` takes a `dtype` argument."""
    try:
        parameters = inspect.signature(workload.record).parameters
    except (TypeError, ValueError):
        return False
    return "dtype" in parameters or any(
        parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()
    )


def record_in_dtype(workload: Workload, rows: int, dtype: Any) -> tuple[Tape, Recording]:
    """A fresh tape of `dtype` with the workload's model recorded for `rows` rows."""
    dtype = np.dtype(dtype)
    tape = Tape(dtype=dtype)
    if dtype == np.float32:
        return tape, workload.record(tape, rows)
    how = (
        "give its record function a `dtype` argument (default np.float32) and make its "
        "tensors in that dtype (README: Checking gradients)"
    )
    if not accepts_dtype(workload):
        raise DtypeNotSupportedError(
            f"workload {workload.name!r} cannot record in {dtype.name}: its record function "
            f"takes no dtype; {how}"
        )
    try:
        recording = workload.record(tape, rows, dtype=dtype)
    except TypeError as error:
        if "tape records" not in str(error):
            raise
        raise DtypeNotSupportedError(
            f"workload {workload.name!r} cannot record in {dtype.name} ({error}); {how}"
        ) from None
    return tape, recording
