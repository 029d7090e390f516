"""PeerTraining: one peer route of a workload (`torch`, `torch-compile`, `jax`), ready to step.

The same recording as topos's routes (recorded once for a shard's rows), the same initial
parameters, the same batches in the same order, the same learning rate at every step,
the same dtype and shard count (the shards run one after another in one program, their
losses averaged as topos averages them); the peer's own autodiff and optimizer.
"""

from __future__ import annotations

import numpy as np

from topos.datasets import Dataset
from topos.graph.tape import Tape
from topos.names import PEER_ROUTES
from topos.peers.peer_optimizer import optimizer_settings
from topos.training.gradient_errors import gradient_errors_on_model_scale
from topos.training.workload import Workload


def make_emitter(
    route: str,
    network,
    loss,
    parameters: list[int],
    shards: int = 1,
    blas_threads: int | None = None,
):
    """The emitter of peer route `route` (imports its framework), computing on
    `blas_threads` threads where the peer can be told (see `peer_threads`)."""
    if route == "jax":
        from topos.peers.jax_emitter import JaxEmitter

        return JaxEmitter(network, loss, parameters, shards)
    if route in ("torch", "torch-compile"):
        from topos.peers.torch_emitter import TorchEmitter

        return TorchEmitter(
            network,
            loss,
            parameters,
            shards,
            compile=route == "torch-compile",
            blas_threads=blas_threads,
        )
    raise ValueError(f"no peer route is called {route!r}; peer routes are {', '.join(PEER_ROUTES)}")


class PeerTraining:
    """Peer route `route` of `workload` on `dataset` for `steps` steps; in `dtype` float64
    (where the workload's `record` takes a dtype, as `topos check` asks) to compare the
    peer with another float64 program (the tests' hand twins), float32 otherwise."""

    def __init__(
        self,
        workload: Workload,
        route: str,
        dataset: Dataset,
        steps: int,
        dtype: type = np.float32,
    ) -> None:
        if steps < 1:
            raise ValueError(f"steps must be at least 1, not {steps}")
        workload = workload.fitted(dataset)
        self.workload = workload
        self.route = route
        self.dataset = dataset
        self.steps = steps
        self.shards = workload.shards
        self.rows = workload.batch_size // self.shards
        if np.dtype(dtype) == np.float32:
            tape = Tape()
            self.recording = workload.record(tape, self.rows)
        else:
            tape = Tape(dtype=dtype)
            self.recording = workload.record(tape, self.rows, dtype=dtype)
        self.network = tape.into_network()
        self.parameter_indices = [symbol.index for symbol in self.recording.parameters]
        self.emitter = make_emitter(
            route,
            self.network,
            self.recording.loss,
            self.parameter_indices,
            self.shards,
            workload.blas_threads,
        )
        self.emitted_nodes = len(self.emitter.program.order)
        self.emitter.configure(
            optimizer_settings(workload.optimizer(), self.network, self.parameter_indices)
        )
        self.order = workload.batch_order(dataset)
        #: The state the next step is fed (`Tape.state`), by input index.
        self.state: dict[int, np.ndarray] = {
            symbol.index: np.asarray(self.network.payloads[symbol.index].numpy())
            for symbol in self.network.state_symbols().values()
        }

    @property
    def version(self) -> str:
        """The peer framework's version."""
        return self.emitter.version

    @property
    def threads(self) -> int | None:
        """The threads the peer computes on, or None where it computes as the process
        set it (a workload's `blas_threads` of None, or JAX, which takes no count)."""
        return self.emitter.threads

    def feeds(self, step: int) -> dict[int, np.ndarray]:
        """Step `step`'s whole batch by input node index, as the workload makes it."""
        indices = self.order.indices(step)
        feeds = self.workload.feeds(self.dataset.train, indices, self.recording)
        arrays = {
            symbol.index: _in_dtype(np.asarray(payload.numpy()), self.network.dtype)
            for symbol, payload in feeds.items()
        }
        return {**arrays, **self.state}

    def step(self, step: int) -> np.floating:
        """Trains one step at the workload's learning rate for it; returns the loss (a
        float32, or a float64 in float64)."""
        rate = float(self.workload.learning_rate(step, self.steps))
        loss = self.emitter.step(self.feeds(step), rate)
        # The state moves on by the step, as on topos's routes (the first shard's values).
        self.state.update(self.emitter.next_state)
        return np.asarray(loss, self.network.dtype)[()]

    def compute(self, step: int):
        """Step `step`'s loss and gradients at the current parameters, nothing updated."""
        return self.emitter.loss_and_gradients(self.feeds(step))

    def warm_up(self) -> None:
        """Step 0's computation run once and thrown away (parameters untouched)."""
        self.compute(0)

    def gradient_errors(self) -> dict[str, float]:
        """At step 0, before any training: each parameter's gradient by the peer against
        topos's (the recorded route, or the workload's first route), as the error on the
        model's scale `|g_peer - g_topos| / max |g_topos|` (Euclidean norms, the largest
        over every parameter: `gradient_errors_on_model_scale`), by parameter name (the
        recording's, else the name it was recorded under, else `%<node index>`:
        `Recording.named_parameters`). Not each parameter's own norm: a convolution's bias
        feeding a batch norm has a true gradient of zero, both frameworks' rounding noise
        alone, and a correct peer read 1.7 against the tolerance's 1e-4 so."""
        from topos.training.route_program import RouteProgram

        route = "recorded" if "recorded" in self.workload.routes else self.workload.routes[0]
        program = RouteProgram(self.workload, route)
        try:
            feeds = self.workload.feeds(
                self.dataset.train, self.order.indices(0), program.recording
            )
            _, gradients = program.compute(program.network.parameters(), feeds)
            # Both recordings list the parameters in the same order (one record function).
            ours = [
                np.asarray(gradients.of(symbol).numpy(), dtype=np.float64)
                for symbol in program.recording.parameters
            ]
        finally:
            program.close()
            program.release()
        _, theirs = self.compute(0)
        names = list(self.recording.named_parameters(self.network.names))
        errors, _ = gradient_errors_on_model_scale(
            (name, theirs[index], expected)
            for name, index, expected in zip(names, self.parameter_indices, ours)
        )
        return errors


def _in_dtype(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A float feed in the program's `dtype` (the datasets make float32); indices as they are."""
    if array.dtype.kind == "f" and array.dtype != dtype:
        return array.astype(dtype)
    return array
