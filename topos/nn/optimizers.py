"""SGD and Adam: small helpers over `Parameters.step`."""

from __future__ import annotations

import numpy as np

from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.tensor import Tensor


class SGD:
    """Plain stochastic gradient descent: `parameter - learning_rate * gradient`."""

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = float(learning_rate)

    def update(self, parameter: Tensor, gradient: Tensor) -> Tensor:
        """One parameter's new payload."""
        # A Python float stays weak under NumPy's promotion, so float32 stays float32.
        return parameter - gradient * self.learning_rate

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one step."""
        return parameters.step(gradients, self.update)


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

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one Adam step; the moments of each parameter with a
        gradient advance once per call."""
        self.steps += 1

        # Parameters.step visits parameters in recording order, so the symbols with a
        # gradient, taken in that order, say which moments each call updates.
        pending = iter([symbol for symbol in parameters.symbols() if symbol in gradients])

        def update(parameter: Tensor, gradient: Tensor) -> Tensor:
            key = next(pending).index
            grad = gradient.numpy()
            zeros = np.zeros_like(grad)
            first, second, count = self._moments.get(key, (zeros, zeros, 0))
            count += 1
            first = self.beta1 * first + (1.0 - self.beta1) * grad
            second = self.beta2 * second + (1.0 - self.beta2) * grad * grad
            self._moments[key] = (first, second, count)
            correction1 = 1.0 - self.beta1**count
            correction2 = 1.0 - self.beta2**count
            denominator = np.sqrt(second / correction2) + self.epsilon
            updated = parameter.numpy() - self.learning_rate * (first / correction1) / denominator
            return Tensor.adopt(updated.astype(parameter.dtype, copy=False))

        return parameters.step(gradients, update)
