"""TorchEmitter: a recording trained by PyTorch: the emitted program, torch.autograd,
and torch.optim configured as the workload's optimizer.

Imported only when a peer route runs (it imports torch).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import numpy as np
import torch

from topos.graph.network import Network
from topos.graph.symbol import Symbol
from topos.peers.emitted_program import EmittedProgram
from topos.peers.peer_optimizer import OptimizerSettings
from topos.peers.peer_threads import peer_threads
from topos.peers.torch_namespace import TorchNamespace


class TorchEmitter:
    """The loss `loss` of `network` as a PyTorch function of the parameters `parameters`
    (node indices, in the recording's order) and the feeds; with `shards > 1` a batch is
    cut into that many shards of rows, each run through the program, their losses averaged
    (topos's shard mean). `compile` runs the loss through `torch.compile`. `blas_threads`
    is the workload's: the threads PyTorch computes on (see `peer_threads`; None leaves
    them as the process set them)."""

    def __init__(
        self,
        network: Network,
        loss: Symbol,
        parameters: list[int],
        shards: int = 1,
        compile: bool = False,
        blas_threads: int | None = None,
    ) -> None:
        #: The threads PyTorch computes on, or None where left as the process set them.
        self.threads = peer_threads(blas_threads, torch.get_num_threads())
        if self.threads is not None:
            torch.set_num_threads(self.threads)
            _limit_inter_op_threads(self.threads)
        self.network = network
        self.xp = TorchNamespace(network.dtype)
        updates = list(network.state_update_symbols().items())
        #: The state inputs and, after each computation, their next values by index.
        self.state_indices = [state.index for state, _ in updates]
        self.next_state: dict[int, np.ndarray] = {}
        self.program = EmittedProgram(network, [loss, *(update for _, update in updates)])
        self.constants = self.program.constants(self.xp)
        self.parameter_indices = list(parameters)
        self.shards = shards
        arrays = network.parameters().arrays()
        self.parameters = [
            torch.tensor(np.array(arrays[index]), requires_grad=True)
            for index in self.parameter_indices
        ]
        self._loss = torch.compile(self._shard_mean) if compile else self._shard_mean
        self.optimizer: torch.optim.Optimizer | None = None

    @property
    def version(self) -> str:
        return str(torch.__version__)

    def _shard_mean(self, parameters: list, feeds: dict):
        by_index = dict(zip(self.parameter_indices, parameters, strict=True))
        return self.program.shard_mean(self.xp, by_index, feeds, self.constants, self.shards)

    def _computed(self, feeds: dict):
        """The loss, keeping the state's next values (detached) in `next_state`."""
        loss, updates = self._loss(self.parameters, feeds)
        self.next_state = {
            index: update.detach().numpy().copy()
            for index, update in zip(self.state_indices, updates, strict=True)
        }
        return loss

    def feeds(self, arrays: Mapping[int, np.ndarray]) -> dict:
        """Feeds by node index as torch tensors (sharing the arrays' memory)."""
        return {index: torch.from_numpy(_writable(array)) for index, array in arrays.items()}

    def loss_and_gradients(self, feeds: Mapping[int, np.ndarray]) -> tuple[np.ndarray, dict]:
        """The loss and each parameter's gradient at the current parameters (nothing
        updated), as NumPy arrays; a parameter the loss does not reach gets zeros."""
        loss = self._computed(self.feeds(feeds))
        gradients = torch.autograd.grad(
            loss, self.parameters, allow_unused=True, materialize_grads=True
        )
        return (
            loss.detach().numpy().copy(),
            {
                index: gradient.detach().numpy().copy()
                for index, gradient in zip(self.parameter_indices, gradients)
            },
        )

    def configure(self, settings: OptimizerSettings) -> None:
        """Makes the torch.optim optimizer `settings` describe (the rate is set per step)."""
        if settings.kind == "sgd":
            self.optimizer = torch.optim.SGD(self.parameters, lr=0.0)
        elif settings.kind == "adam":
            self.optimizer = torch.optim.Adam(
                self.parameters,
                lr=0.0,
                betas=(settings.beta1, settings.beta2),
                eps=settings.epsilon,
            )
        else:
            decayed = [
                p for i, p in zip(self.parameter_indices, self.parameters) if i in settings.decayed
            ]
            kept = [
                p
                for i, p in zip(self.parameter_indices, self.parameters)
                if i not in settings.decayed
            ]
            groups = [
                {"params": group, "weight_decay": decay}
                for group, decay in ((decayed, settings.weight_decay), (kept, 0.0))
                if group
            ]
            self.optimizer = torch.optim.AdamW(
                groups, lr=0.0, betas=(settings.beta1, settings.beta2), eps=settings.epsilon
            )

    def step(self, feeds: Mapping[int, np.ndarray], learning_rate: float) -> np.ndarray:
        """One training step at `learning_rate`; returns the loss before it."""
        optimizer = self.optimizer
        optimizer.zero_grad(set_to_none=False)
        loss = self._computed(self.feeds(feeds))
        loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        optimizer.step()
        return loss.detach().numpy()


def _limit_inter_op_threads(threads: int) -> None:
    """PyTorch's inter-op pool at `threads`, if it is still unset (it can be set once, and
    only before it first runs work: a second emitter in one process keeps the first's)."""
    # Asking its size first could start the pool; setting it once it runs raises.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(threads)


def _writable(array: np.ndarray) -> np.ndarray:
    """`array` itself when torch may share it (C-contiguous, writable), else a copy."""
    if array.flags.c_contiguous and array.flags.writeable:
        return array
    return np.array(array, order="C")
