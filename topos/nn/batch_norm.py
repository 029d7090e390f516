"""batch_norm, BatchNorm1d and BatchNorm2d: each channel standardised by its batch
statistics while training (its running statistics kept as state across steps), or by
those running statistics in evaluation."""

from __future__ import annotations

from typing import Any

from topos.errors import ShapeError
from topos.graph.symbol import Symbol
from topos.graph.tape import Tape
from topos.graph.value import Value
from topos.nn.module import Module
from topos.tensor import Tensor

#: PyTorch's defaults.
EPS = 1e-5
MOMENTUM = 0.1


def batch_norm(
    input: Value,
    running_mean: Value | None,
    running_var: Value | None,
    weight: Value | None = None,
    bias: Value | None = None,
    training: bool = False,
    momentum: float = MOMENTUM,
    eps: float = EPS,
) -> Value:
    """`torch.nn.functional.batch_norm` over `input [N, C, ...]` (channels on axis 1).

    Training (or without running statistics), each channel is standardised by the mean
    and biased variance over the batch and every axis past the channels; the running
    statistics, states of the tape (`Tape.state`), are given their next values,
    `(1 - momentum) * running + momentum * batch`, the variance's unbiased as PyTorch's.
    In evaluation the running statistics standardise instead. Then `* weight + bias`
    (`[C]` each) where given."""
    if input.shape.rank < 2:
        raise ShapeError(f"batch_norm: input {input.shape} must be [N, C, ...]")
    channels = input.shape[1]
    for role, value in (("running_mean", running_mean), ("running_var", running_var)):
        if value is not None and value.shape != (channels,):
            raise ShapeError(f"batch_norm: {role} {value.shape} for input {input.shape}")
    for role, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != (channels,):
            raise ShapeError(f"batch_norm: {role} {value.shape} for input {input.shape}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("batch_norm: give both running statistics, or neither")
    view = [1] * input.shape.rank
    view[1] = channels
    axes = tuple(axis for axis in range(input.shape.rank) if axis != 1)
    if training or running_mean is None:
        count = input.shape.volume // channels
        if count < 2 and training:
            raise ShapeError(
                f"batch_norm: input {input.shape} has {count} value per channel; training "
                f"statistics need more than 1"
            )
        mean = input.mean(axes, keepdims=True)
        centred = input - mean
        variance = (centred * centred).mean(axes, keepdims=True)
        if training and running_mean is not None:
            tape = input.tape
            kept = 1.0 - float(momentum)
            tape.update_state(
                running_mean, running_mean * kept + mean.reshape(channels) * float(momentum)
            )
            unbiased = float(momentum) * count / (count - 1)
            tape.update_state(
                running_var, running_var * kept + variance.reshape(channels) * unbiased
            )
    else:
        centred = input - running_mean.reshape(*view)
        variance = running_var.reshape(*view)
    normalised = centred * (variance + float(eps)).rsqrt()
    if weight is not None:
        normalised = normalised * weight.reshape(*view)
    if bias is not None:
        normalised = normalised + bias.reshape(*view)
    return normalised


class BatchNorm(Module):
    """A batch norm over `num_features` channels with PyTorch's constructor arguments
    (`eps`, `momentum`, `affine`, `track_running_stats`). Its weight (1) and bias (0)
    are parameters `<name>.weight` and `<name>.bias`; its running mean (0) and variance
    (1) are state `<name>.running_mean` and `<name>.running_var` (`Tape.state`), which
    a training carries from step to step (`Training.state`). It records the training
    form, or after `eval()` the evaluation form, fed the running statistics by name.
    `dtype` is the tape's unless given."""

    #: The ranks of input this layer takes (its subclasses').
    ranks: tuple[int, ...] = ()

    def __init__(
        self,
        tape: Tape,
        num_features: int,
        eps: float = EPS,
        momentum: float | None = MOMENTUM,
        affine: bool = True,
        track_running_stats: bool = True,
        name: str | None = None,
        dtype: Any = None,
    ) -> None:
        kind = type(self).__name__
        if not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"{kind}: num_features {num_features!r} must be a positive int")
        if momentum is None:
            raise ValueError(
                f"{kind}: momentum=None (a cumulative average of the batches) is not "
                f"supported yet; give a momentum in [0, 1]"
            )
        if not 0.0 <= momentum <= 1.0 or eps <= 0.0:
            raise ValueError(f"{kind}: momentum {momentum} must lie in [0, 1], eps {eps} > 0")
        dtype = tape.dtype if dtype is None else dtype
        self.name = name
        self.num_features = num_features
        self.eps = float(eps)
        self.momentum = float(momentum)

        def named(suffix: str) -> str | None:
            return None if name is None else f"{name}.{suffix}"

        self._weight = self._bias = None
        if affine:
            self._weight = tape.parameter(
                Tensor.filled([num_features], 1.0, dtype=dtype), named("weight")
            )
            self._bias = tape.parameter(
                Tensor.filled([num_features], 0.0, dtype=dtype), named("bias")
            )
        self._running_mean = self._running_var = None
        if track_running_stats:
            self._running_mean = tape.state(
                Tensor.filled([num_features], 0.0, dtype=dtype), named("running_mean")
            )
            self._running_var = tape.state(
                Tensor.filled([num_features], 1.0, dtype=dtype), named("running_var")
            )
        self._expressed = False

    def express(self, value: Value) -> Value:
        """Records the batch norm of `value`, in training or evaluation form. Training,
        it can be expressed once a tape: its running statistics have one next value."""
        if value.shape.rank not in self.ranks or value.shape[1] != self.num_features:
            forms = " or ".join(_form(rank) for rank in self.ranks)
            raise ShapeError(
                f"{type(self).__name__}({self.num_features}): input {value.shape} must be "
                f"{forms} with C = {self.num_features}"
            )
        if self.training and self._running_mean is not None:
            if self._expressed:
                raise ValueError(
                    f"{type(self).__name__} {self.name or ''}: a training batch norm is "
                    f"expressed once a recording (its running statistics take one update a "
                    f"step); make one layer per use"
                )
            self._expressed = True
        return batch_norm(
            value,
            self._running_mean,
            self._running_var,
            self._weight,
            self._bias,
            self.training,
            self.momentum,
            self.eps,
        )

    def parameters(self) -> list[Symbol]:
        """Weight, then bias (none when not `affine`)."""
        return [] if self._weight is None else [self._weight.symbol, self._bias.symbol]

    def state(self) -> list[Symbol]:
        """The running mean, then the running variance (none without running statistics)."""
        if self._running_mean is None:
            return []
        return [self._running_mean.symbol, self._running_var.symbol]


def _form(rank: int) -> str:
    return (
        "["
        + ", ".join(["N", "C", "L", "H", "W"][:rank] if rank < 4 else ["N", "C", "H", "W"])
        + "]"
    )


class BatchNorm1d(BatchNorm):
    """`torch.nn.BatchNorm1d`: over `[N, C]` rows or `[N, C, L]` sequences."""

    ranks = (2, 3)


class BatchNorm2d(BatchNorm):
    """`torch.nn.BatchNorm2d`: over `[N, C, H, W]` images."""

    ranks = (4,)
