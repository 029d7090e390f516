"""StepTensors: the bytes of tensors a native route's step holds at once, at its peak, as
the framework itself accounts them: PyTorch's profiler for a PyTorch step, XLA's buffer
assignment for a compiled JAX step.

Why not resident memory: a native route's worker runs with glibc's own mmap threshold
(`topos_cli.harness.worker_environment`), so a tensor PyTorch or XLA frees goes back to
malloc's heap, not to the kernel. By the time the worker is ready its warm-up steps have
already grown the heap to hold their activations, and a measured step reuses that heap:
peak RSS minus ready RSS (the training Δ) is only the heap's growth beyond the warm-up,
a few MiB that move between runs, blind to what checkpointing frees. The step tensors
count every allocation and free of the step itself, whatever the heap keeps.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Where a PyTorch step's figure comes from.
TORCH_SOURCE = "torch.profiler"
#: Where a JAX step's figure comes from.
JAX_SOURCE = "xla buffer assignment"

#: Kineto's lowest severity none of its lines reaches (VERBOSE 0 ... ERROR 4, USDT 5):
#: under PyTorch's profiler it writes to the process's stderr itself, a `USDT:` line at
#: every start and stop and, on a CUDA build without a GPU, `ERROR: gpuGetDeviceCount
#: failed`, none of them about the user's step. It reads the level when the profiler
#: first starts, so setting it just before is soon enough.
KINETO_QUIET = "6"


@dataclass(frozen=True)
class StepTensors:
    """The peak bytes of tensors one step holds beyond what was live before it (the
    parameters, the optimizer's state, the batch), where the figure comes from (`source`),
    and the parts it was summed from (a JAX step's `temp`, `output`, `alias`, ...)."""

    peak_bytes: int
    source: str
    parts: dict[str, int] = field(default_factory=dict)


def torch_step_tensors(step: Callable[[], Any]) -> StepTensors:
    """The peak live tensor bytes while `step()` runs (a forward and backward pass), from
    the `[memory]` events of PyTorch's profiler (`profile_memory=True`): every CPU
    allocation and free, in order, summed; the peak of that sum is the most the step's
    own tensors (activations, what checkpointing saves or recomputes, gradients,
    temporaries) hold at once. Tensors alive before it (parameters) are not in it."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    # A user who set the level wants kineto's lines: theirs is kept.
    os.environ.setdefault("KINETO_LOG_LEVEL", KINETO_QUIET)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as profiler:
        step()
    events = [
        event
        for event in profiler.profiler.kineto_results.events()
        if event.name() == "[memory]" and event.device_type() == torch.autograd.DeviceType.CPU
    ]
    if not events:
        # Kineto's own account of why is silenced above: said here instead, in one line.
        raise RuntimeError(
            "PyTorch's profiler recorded no memory events (KINETO_LOG_LEVEL=0 shows its log)"
        )
    events.sort(key=lambda event: event.start_ns())
    live = peak = 0
    for event in events:
        live += event.nbytes()
        peak = max(peak, live)
    return StepTensors(peak_bytes=peak, source=TORCH_SOURCE, parts={"events": len(events)})


def jax_step_tensors(compiled: Any) -> StepTensors | None:
    """The bytes a compiled JAX step allocates beyond its arguments, from XLA's buffer
    assignment (`compiled.memory_analysis()`): its temporaries (`temp`: every
    intermediate, packed by liveness: the activations the backward pass reads, the
    gradients, the update's) plus its outputs less those aliasing a donated argument
    (`output - alias`: the new parameters and optimizer state reuse the old ones'
    buffers, the loss does not). The arguments themselves are held before the step.
    None where the backend gives no analysis."""
    analysis = compiled.memory_analysis()
    if analysis is None:
        return None
    parts = {
        "temp": int(analysis.temp_size_in_bytes),
        "output": int(analysis.output_size_in_bytes),
        "alias": int(analysis.alias_size_in_bytes),
        "argument": int(analysis.argument_size_in_bytes),
    }
    peak = parts["temp"] + parts["output"] - parts["alias"]
    return StepTensors(peak_bytes=peak, source=JAX_SOURCE, parts=parts)
