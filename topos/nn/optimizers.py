"""SGD, Adam and AdamW: small helpers over `Parameters.step`."""

from __future__ import annotations

from collections.abc import Callable

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

    def state_bytes(self, parameters: Parameters) -> int:
        """The bytes of the moments once every parameter has had a step: two per value."""
        return 2 * sum(tensor.numpy().nbytes for _, tensor in parameters.items())

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


class AdamW:
    """AdamW (Loshchilov and Hutter): Adam with weight decay decoupled from the gradient,
    step for step as PyTorch's `torch.optim.AdamW` computes it in float32:

        p *= 1 - lr * weight_decay            (where `decays(p)`; every parameter by default)
        m += (1 - beta1) * (g - m)
        v = beta2 * v + (1 - beta2) * g * g
        p += -(lr / (1 - beta1^t)) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))

    with t the parameter's own count of updates. `decays` picks the decayed parameters by
    their payload: `lambda p: p.shape.rank >= 2` decays weights and embeddings, not
    biases or layer norms (the usual transformer recipe).
    """

    def __init__(
        self,
        learning_rate: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        epsilon: float = 1e-8,
        weight_decay: float = 0.01,
        decays: Callable[[Tensor], bool] | None = None,
    ) -> None:
        self.learning_rate = float(learning_rate)
        self.beta1, self.beta2 = (float(beta) for beta in betas)
        self.epsilon = float(epsilon)
        self.weight_decay = float(weight_decay)
        self.decays = decays
        self.steps = 0
        # Per parameter: the first and second moments (owned here, updated in place) and
        # how many updates they have seen.
        self._moments: dict[int, list] = {}

    def state_bytes(self, parameters: Parameters) -> int:
        """The bytes of the moments once every parameter has had a step: two per value."""
        return 2 * sum(tensor.numpy().nbytes for _, tensor in parameters.items())

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one AdamW step."""
        self.steps += 1
        pending = iter([symbol for symbol in parameters.symbols() if symbol in gradients])
        learning_rate = self.learning_rate

        def update(parameter: Tensor, gradient: Tensor) -> Tensor:
            key = next(pending).index
            grad = gradient.numpy()
            state = self._moments.get(key)
            if state is None:
                state = [np.zeros_like(grad), np.zeros_like(grad), 0]
                self._moments[key] = state
            first, second, count = state
            count += 1
            state[2] = count
            updated = np.array(parameter.numpy())
            if self.weight_decay and (self.decays is None or self.decays(parameter)):
                updated *= 1.0 - learning_rate * self.weight_decay
            first += (1.0 - self.beta1) * (grad - first)
            second *= self.beta2
            second += (1.0 - self.beta2) * (grad * grad)
            step_size = learning_rate / (1.0 - self.beta1**count)
            denominator = np.sqrt(second)
            denominator /= (1.0 - self.beta2**count) ** 0.5
            denominator += self.epsilon
            updated += -step_size * (first / denominator)
            return Tensor.adopt(updated.astype(parameter.dtype, copy=False))

        return parameters.step(gradients, update)
