"""The user ResNet of `tests/support/user_models.py` returning its parameters as a list of
symbols, as the docs' own example does (`Recording(images, targets, logits, loss,
parameters)`), its parameters named where they were recorded (`tape.parameter(t, name)`):
the verdict must still name them so, not `%2`, `%3`.

Name it as `tests.peers.listed_parameters:resnet_workload`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tests.support import user_models
from topos import Tape
from topos.training import Recording


def record_resnet(tape: Tape, rows: int, dtype=np.float32) -> Recording:
    """The user ResNet, its parameters given as a list."""
    named = user_models.record_resnet(tape, rows, dtype)
    return Recording(named.images, named.targets, named.logits, named.loss, list(named.parameters))


resnet_workload = dataclasses.replace(
    user_models.resnet_workload, name="user_resnet_listed", record=record_resnet
)
