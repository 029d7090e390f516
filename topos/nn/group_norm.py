"""group_norm and GroupNorm: each sample's channels standardised group by group."""

from __future__ import annotations

from typing import Any

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.module import Module
from topos.tensor import Tensor

#: PyTorch's default.
EPS = 1e-5


def group_norm(
    input: Value,
    num_groups: int,
    weight: Value | None = None,
    bias: Value | None = None,
    eps: float = EPS,
) -> Value:
    """`torch.nn.functional.group_norm` over `input [N, C, ...]`: the `C / num_groups`
    channels of each group (and every axis past them) standardised by their own mean
    and biased variance, each sample alone, then `* weight + bias` per channel (`[C]`).
    Each group is one row of the layer norm's fused `row_scale` and `standardize`."""
    if input.shape.rank < 2:
        raise ShapeError(f"group_norm: input {input.shape} must be [N, C, ...]")
    channels = input.shape[1]
    if num_groups < 1 or channels % num_groups:
        raise ShapeError(f"group_norm: {num_groups} groups do not divide {channels} channels")
    for role, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != (channels,):
            raise ShapeError(f"group_norm: {role} {value.shape} for input {input.shape}")
    tape = input.tape
    rows = input.reshape(input.shape[0] * num_groups, -1)
    scale = tape.record("row_scale", (rows,), eps=float(eps))
    normalised = tape.record("standardize", (rows, scale)).reshape(*input.shape)
    view = [1] * input.shape.rank
    view[1] = channels
    if weight is not None:
        normalised = normalised * weight.reshape(*view)
    if bias is not None:
        normalised = normalised + bias.reshape(*view)
    return normalised


class GroupNorm(Module):
    """`torch.nn.GroupNorm(num_groups, num_channels, eps, affine)`: weight 1 and bias 0
    to start, per channel (`<name>.weight`, `<name>.bias`); `dtype` is the tape's
    unless given."""

    def __init__(
        self,
        tape: Tape,
        num_groups: int,
        num_channels: int,
        eps: float = EPS,
        affine: bool = True,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: {num_groups} groups do not divide {num_channels} channels"
            )
        dtype = tape.dtype if dtype is None else dtype
        self.name, self.num_groups, self.num_channels, self.eps = (
            name,
            num_groups,
            num_channels,
            eps,
        )
        self._weight = self._bias = None
        if affine:
            self._weight = tape.parameter(
                Tensor.filled([num_channels], 1.0, dtype=dtype),
                None if name is None else f"{name}.weight",
            )
            self._bias = tape.parameter(
                Tensor.filled([num_channels], 0.0, dtype=dtype),
                None if name is None else f"{name}.bias",
            )

    def express(self, value: Value) -> Value:
        """Records the group norm of `value [N, C, ...]`."""
        if value.shape.rank < 2 or value.shape[1] != self.num_channels:
            raise ShapeError(
                f"GroupNorm({self.num_groups}, {self.num_channels}): input {value.shape} must "
                f"be [N, {self.num_channels}, ...]"
            )
        return group_norm(value, self.num_groups, self._weight, self._bias, self.eps)

    def parameters(self) -> list[Symbol]:
        """Weight, then bias (none when not `affine`)."""
        return [] if self._weight is None else [self._weight.symbol, self._bias.symbol]
