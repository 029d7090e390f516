"""SGD and Adam: small helpers over `Parameters.step`, and the same updates in place.

`step` is functional: it returns new payloads and leaves the caller's Parameters
alone. `step_in_place` writes the very same arithmetic into arrays the caller owns
(the training loop's, see `topos.training.parameter_memory`), a chunk at a time
(`topos.nn.chunked_update`), so a step does not pay for its parameters twice.
`state_sizes` and `workspace_bytes` say, from sizes alone, what the optimizer keeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.nn.chunked_update import Workspace, chunks, flat
from topos.tensor import Tensor


class SGD:
    """Plain stochastic gradient descent: `parameter - learning_rate * gradient`."""

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = float(learning_rate)
        self._workspace = Workspace(1)

    def update(self, parameter: Tensor, gradient: Tensor) -> Tensor:
        """One parameter's new payload."""
        # A Python float stays weak under NumPy's promotion, so float32 stays float32.
        return parameter - gradient * self.learning_rate

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one step."""
        return parameters.step(gradients, self.update)

    def step_in_place(
        self, arrays: Mapping[int, np.ndarray], gradients: ParameterGradients
    ) -> None:
        """`update` written into each parameter's own array (keyed by node index), the
        same two operations per element: `gradient * learning_rate`, then the difference."""
        for index, array in arrays.items():
            gradient = gradients.by_index(index)
            if gradient is None:
                continue
            parameter, gradient = array.reshape(-1), flat(gradient.numpy())
            (scaled,) = self._workspace.buffers(array.dtype)
            for part in chunks(parameter.size):
                product = scaled[: part.stop - part.start]
                np.multiply(gradient[part], self.learning_rate, out=product)
                np.subtract(parameter[part], product, out=parameter[part])

    def state_sizes(self, sizes: Sequence[int]) -> list[int]:
        """The arrays it keeps between steps, in bytes, for parameters of `sizes` bytes:
        plain SGD keeps none."""
        return []

    def workspace_bytes(self, dtype: np.dtype, largest: int) -> int:
        """The one chunk `step_in_place` scales gradients in, for parameters of at most
        `largest` elements."""
        return Workspace(1).bytes(dtype, largest)


class Adam:
    """Adam (Kingma and Ba), holding its moment estimates per parameter between steps."""

    def __init__(
        self,
        learning_rate: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
    ) -> None:
        self.learning_rate = float(learning_rate)
        self.beta1 = float(beta1)
        self.beta2 = float(beta2)
        self.epsilon = float(epsilon)
        self.steps = 0
        # Per parameter: the first and second moment estimates and how many updates
        # they have seen; bias correction counts a parameter's own updates, so one that
        # gets no gradient on some call is corrected as if that call had not happened.
        self._moments: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        self._workspace = Workspace(2)

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one Adam step; the moments of each parameter with a
        gradient advance once per call. Each new payload is a copy of the old one updated
        by `step_in_place`'s arithmetic."""
        self.steps += 1

        # Parameters.step visits parameters in recording order, so the symbols with a
        # gradient, taken in that order, say which moments each call updates.
        pending = iter([symbol for symbol in parameters.symbols() if symbol in gradients])

        def update(parameter: Tensor, gradient: Tensor) -> Tensor:
            updated = np.array(parameter.numpy(), order="C")
            self._update(next(pending).index, updated.reshape(-1), flat(gradient.numpy()))
            return Tensor.adopt(updated)

        return parameters.step(gradients, update)

    def step_in_place(
        self, arrays: Mapping[int, np.ndarray], gradients: ParameterGradients
    ) -> None:
        """One Adam step written into each parameter's own array (keyed by node index, in
        recording order), the moments advancing as `step` advances them."""
        self.steps += 1
        for index, array in arrays.items():
            gradient = gradients.by_index(index)
            if gradient is not None:
                self._update(index, array.reshape(-1), flat(gradient.numpy()))

    def _update(self, key: int, parameter: np.ndarray, gradient: np.ndarray) -> None:
        """Advances parameter `key`'s moments and writes its update into `parameter`
        (both flat), chunk by chunk, in the order of the whole-array formulas:
        first = beta1 * first + (1 - beta1) * grad,
        second = beta2 * second + (1 - beta2) * grad * grad,
        parameter - learning_rate * (first / correction1) / (sqrt(second / correction2) + epsilon).
        """
        moments = self._moments.get(key)
        if moments is None:
            moments = (np.zeros_like(gradient), np.zeros_like(gradient), 0)
        first, second, count = moments
        count += 1
        self._moments[key] = (first, second, count)
        correction1 = 1.0 - self.beta1**count
        correction2 = 1.0 - self.beta2**count
        scratch, denominator = self._workspace.buffers(parameter.dtype)
        for part in chunks(parameter.size):
            grad = gradient[part]
            length = part.stop - part.start
            term, root = scratch[:length], denominator[:length]
            np.multiply(first[part], self.beta1, out=first[part])
            np.multiply(grad, 1.0 - self.beta1, out=term)
            np.add(first[part], term, out=first[part])
            np.multiply(second[part], self.beta2, out=second[part])
            np.multiply(grad, 1.0 - self.beta2, out=term)
            np.multiply(term, grad, out=term)
            np.add(second[part], term, out=second[part])
            np.divide(second[part], correction2, out=root)
            np.sqrt(root, out=root)
            np.add(root, self.epsilon, out=root)
            np.divide(first[part], correction1, out=term)
            np.multiply(term, self.learning_rate, out=term)
            np.divide(term, root, out=term)
            np.subtract(parameter[part], term, out=parameter[part])

    def state_sizes(self, sizes: Sequence[int]) -> list[int]:
        """The arrays it keeps between steps, in bytes, for parameters of `sizes` bytes:
        two moment estimates of each."""
        return [*sizes, *sizes]

    def workspace_bytes(self, dtype: np.dtype, largest: int) -> int:
        """The two chunks the update's temporaries live in, for parameters of at most
        `largest` elements."""
        return Workspace(2).bytes(dtype, largest)
