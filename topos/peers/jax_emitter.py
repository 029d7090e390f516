"""JaxEmitter: a recording trained by JAX: the emitted program, `jax.value_and_grad` under
`jax.jit`, and the workload's optimizer written as a plain update in the same jitted step.

Imported only when a peer route runs (it imports jax). A float64 recording turns on JAX's
64-bit mode (`jax_enable_x64`), without which JAX computes in float32.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from topos.graph.network import Network
from topos.graph.symbol import Symbol
from topos.peers.emitted_program import EmittedProgram
from topos.peers.peer_optimizer import OptimizerSettings


class JaxEmitter:
    """The loss `loss` of `network` as a jitted JAX function of the parameters
    `parameters` (node indices) and the feeds; shards as `TorchEmitter`'s."""

    def __init__(
        self, network: Network, loss: Symbol, parameters: list[int], shards: int = 1
    ) -> None:
        if np.dtype(network.dtype) == np.float64:
            jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        from topos.peers.jax_namespace import JaxNamespace

        self.jnp = jnp
        self.network = network
        self.xp = JaxNamespace(network.dtype)
        updates = list(network.state_update_symbols().items())
        #: The state inputs and, after each computation, their next values by index.
        self.state_indices = [state.index for state, _ in updates]
        self.next_state: dict[int, np.ndarray] = {}
        self.program = EmittedProgram(network, [loss, *(update for _, update in updates)])
        self.constants = self.program.constants(self.xp)
        self.parameter_indices = list(parameters)
        self.shards = shards
        arrays = network.parameters().arrays()
        self.parameters = [jnp.asarray(np.array(arrays[i])) for i in self.parameter_indices]
        self._value_and_grad = jax.jit(jax.value_and_grad(self._shard_mean, has_aux=True))
        self._step = None
        self._state = None
        #: JAX computes on the process's cores: XLA takes no thread count (`peer_threads`).
        self.threads = None

    @property
    def version(self) -> str:
        return str(jax.__version__)

    def _shard_mean(self, parameters: list, feeds: dict):
        by_index = dict(zip(self.parameter_indices, parameters, strict=True))
        return self.program.shard_mean(self.xp, by_index, feeds, self.constants, self.shards)

    def feeds(self, arrays: Mapping[int, np.ndarray]) -> dict:
        return {index: self.jnp.asarray(array) for index, array in arrays.items()}

    def loss_and_gradients(self, feeds: Mapping[int, np.ndarray]) -> tuple[np.ndarray, dict]:
        """The loss and each parameter's gradient at the current parameters (nothing
        updated), as NumPy arrays."""
        (loss, updates), gradients = self._value_and_grad(self.parameters, self.feeds(feeds))
        self._keep(updates)
        return np.asarray(loss), {
            index: np.asarray(gradient)
            for index, gradient in zip(self.parameter_indices, gradients)
        }

    def configure(self, settings: OptimizerSettings) -> None:
        """Writes `settings`' update into one jitted step with the gradients."""
        jnp = self.jnp
        decayed = [index in settings.decayed for index in self.parameter_indices]
        beta1, beta2, epsilon = settings.beta1, settings.beta2, settings.epsilon
        decay = settings.weight_decay
        kind = settings.kind

        def step(parameters, state, feeds, rate):
            (loss, updates), gradients = jax.value_and_grad(self._shard_mean, has_aux=True)(
                parameters, feeds
            )
            if kind == "sgd":
                return [p - g * rate for p, g in zip(parameters, gradients)], state, loss, updates
            firsts, seconds, count = state
            count = count + 1
            correction1 = 1.0 - beta1**count
            correction2 = 1.0 - beta2**count
            updated, new_firsts, new_seconds = [], [], []
            for p, g, m, v, decays in zip(parameters, gradients, firsts, seconds, decayed):
                if kind == "adam":
                    m = beta1 * m + (1.0 - beta1) * g
                    v = beta2 * v + (1.0 - beta2) * g * g
                    p = p - rate * (m / correction1) / (jnp.sqrt(v / correction2) + epsilon)
                else:
                    if decays:
                        p = p * (1.0 - rate * decay)
                    m = m + (g - m) * (1.0 - beta1)
                    v = v * beta2 + g * g * (1.0 - beta2)
                    denominator = jnp.sqrt(v) / jnp.sqrt(correction2) + epsilon
                    p = p - (rate / correction1) * (m / denominator)
                updated.append(p.astype(g.dtype))
                new_firsts.append(m)
                new_seconds.append(v)
            return updated, (new_firsts, new_seconds, count), loss, updates

        self._step = jax.jit(step)
        zeros = [jnp.zeros_like(p) for p in self.parameters]
        self._state = (zeros, [jnp.zeros_like(p) for p in self.parameters], jnp.asarray(0.0))

    def step(self, feeds: Mapping[int, np.ndarray], learning_rate: float) -> np.ndarray:
        """One training step at `learning_rate`; returns the loss before it."""
        rate = self.jnp.asarray(learning_rate, dtype=self.network.dtype)
        self.parameters, self._state, loss, updates = self._step(
            self.parameters, self._state, self.feeds(feeds), rate
        )
        self._keep(updates)
        return np.asarray(loss)

    def _keep(self, updates) -> None:
        """The state's next values, by state input, as NumPy arrays (`next_state`)."""
        self.next_state = {
            index: np.asarray(update)
            for index, update in zip(self.state_indices, updates, strict=True)
        }
