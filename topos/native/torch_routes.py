"""The routes every PyTorch workload offers: variants of its one training step.

Each maker takes the model, the workload's loss and the blocks the workload names,
and returns `loss_of(*batch)`; topos calls `.backward()` on its result.

- `eager`: the loss as written; the reference.
- `checkpoint`: each named block under `torch.utils.checkpoint` (`use_reentrant=False`,
  the RNG state preserved): recomputed in the backward pass, bit-identical to eager.
- `checkpoint-unpreserved-rng`: the same with `preserve_rng_state=False`, the setting
  that changes the loss of a model with dropout (the recomputed mask is a new draw).
- `selective`: each block under a selective checkpoint policy that saves the matrix
  products and recomputes everything else.
- `compile`: the loss through `torch.compile` (inductor), judged by agreement.
- `compile-budget-<fraction>`: the same under the partitioner's
  `activation_memory_budget` of `<fraction>` (0 to 1), e.g. `compile-budget-0.5`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from topos.names import compile_budget_of
from topos.native.native_route import NativeRoute
from topos.native.partitioner_estimate import record_estimates


def _plain(model: Any, loss: Callable[..., Any]) -> Callable[..., Any]:
    """The loss of one batch as the workload wrote it."""
    return lambda *batch: loss(model, *batch)


def eager(model: Any, loss: Callable[..., Any], blocks: list[Any]) -> Callable[..., Any]:
    """The step as written: the reference every other route is judged against."""
    return _plain(model, loss)


def checkpoint_blocks(blocks: list[Any], **settings: Any) -> None:
    """Puts each module of `blocks` under `torch.utils.checkpoint` (`use_reentrant=False`
    and `settings`), by replacing the instance's `forward`: its activations are freed
    after the forward pass and recomputed in the backward one."""
    from torch.utils.checkpoint import checkpoint

    if not blocks:
        raise ValueError(
            "a checkpointing route needs blocks to checkpoint: give the workload "
            "blocks=lambda model: [...] naming the modules"
        )
    for block in blocks:
        forward = block.forward

        def checkpointed(*args: Any, _forward: Any = forward, **kwargs: Any) -> Any:
            return checkpoint(_forward, *args, use_reentrant=False, **settings, **kwargs)

        block.forward = checkpointed


def checkpointed(model: Any, loss: Callable[..., Any], blocks: list[Any]) -> Callable[..., Any]:
    """Each block checkpointed, the RNG state preserved for its recomputation."""
    checkpoint_blocks(blocks, preserve_rng_state=True)
    return _plain(model, loss)


def checkpointed_unpreserved_rng(
    model: Any, loss: Callable[..., Any], blocks: list[Any]
) -> Callable[..., Any]:
    """Each block checkpointed with `preserve_rng_state=False`: a block that draws random
    numbers (dropout) draws anew when it is recomputed."""
    checkpoint_blocks(blocks, preserve_rng_state=False)
    return _plain(model, loss)


#: The operations the selective policy saves: matrix products, the costly ones to redo.
MATRIX_PRODUCTS = ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear")


def _save_matrix_products(context: Any, operation: Any, *args: Any, **kwargs: Any) -> Any:
    """The selective policy: save a matrix product's output, recompute everything else."""
    from torch.utils.checkpoint import CheckpointPolicy

    name = getattr(operation, "__name__", str(operation)).split(".")[0]
    if name in MATRIX_PRODUCTS:
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


def selective(model: Any, loss: Callable[..., Any], blocks: list[Any]) -> Callable[..., Any]:
    """Each block under a selective checkpoint policy: matrix products saved, the rest
    (norms, activations, softmax) recomputed."""
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    context = functools.partial(create_selective_checkpoint_contexts, _save_matrix_products)
    checkpoint_blocks(blocks, preserve_rng_state=True, context_fn=context)
    return _plain(model, loss)


def compiled(model: Any, loss: Callable[..., Any], blocks: list[Any]) -> Callable[..., Any]:
    """The loss through `torch.compile` (its backward compiled by AOTAutograd), the
    partitioner's estimate of what it saves recorded (`partitioner_estimate`)."""
    import torch

    record_estimates()
    return torch.compile(_plain(model, loss))


def compiled_under_budget(fraction: float) -> Callable[..., Callable[..., Any]]:
    """A maker compiling the loss under the partitioner's activation memory budget
    `fraction` (the worker is a process of its own: the setting is process-wide), the
    partitioner's estimate of its plan recorded (`partitioner_estimate`)."""

    def make(model: Any, loss: Callable[..., Any], blocks: list[Any]) -> Callable[..., Any]:
        import torch
        import torch._functorch.config as functorch_config

        functorch_config.activation_memory_budget = fraction
        record_estimates()
        return torch.compile(_plain(model, loss))

    return make


#: The fixed-name routes, in the order they are listed.
TORCH_ROUTES: dict[str, NativeRoute] = {
    "eager": NativeRoute(eager, exact=True, description="the step as written"),
    "checkpoint": NativeRoute(
        checkpointed,
        exact=True,
        description="blocks under torch.utils.checkpoint (use_reentrant=False)",
    ),
    "checkpoint-unpreserved-rng": NativeRoute(
        checkpointed_unpreserved_rng,
        exact=True,
        description="blocks checkpointed with preserve_rng_state=False",
    ),
    "selective": NativeRoute(
        selective,
        exact=True,
        description="selective checkpointing: matrix products saved, the rest recomputed",
    ),
    "compile": NativeRoute(compiled, exact=False, description="torch.compile (inductor)"),
}


def torch_route(name: str) -> NativeRoute | None:
    """The built-in route called `name` (a `compile-budget-<fraction>` among them), or
    None."""
    if name in TORCH_ROUTES:
        return TORCH_ROUTES[name]
    fraction = compile_budget_of(name)
    if fraction is None:
        return None
    return NativeRoute(
        compiled_under_budget(fraction),
        exact=False,
        description=f"torch.compile under activation_memory_budget={fraction:g}",
    )
