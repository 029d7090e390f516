"""SGD, Adam and AdamW: small helpers over `Parameters.step`, and the same updates in place.

`step` is functional: it returns new payloads and leaves the caller's Parameters
alone. `step_in_place` writes the very same arithmetic into arrays the caller owns
(the training loop's, see `topos.training.parameter_memory`), a chunk at a time
(`topos.nn.chunked_update`), so a step does not pay for its parameters twice.
`state_sizes` and `workspace_bytes` say, from sizes alone, what the optimizer keeps.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos.nn.adjacent_runs import HeldRuns, breaks, span
from topos.nn.chunked_update import Workspace, chunks, flat
from topos.tensor import Shape, Tensor


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


class MomentOptimizer:
    """What Adam and AdamW share: two moment estimates per parameter and a count of its
    own updates, a functional `step` and an in-place one running the same arithmetic
    (`_update`, each subclass's own), and what they keep and use, in bytes."""

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = float(learning_rate)
        self.steps = 0
        # Per parameter: the first and second moment estimates and how many updates
        # they have seen; bias correction counts a parameter's own updates, so one that
        # gets no gradient on some call is corrected as if that call had not happened.
        self._moments: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        self._workspace = Workspace(2)
        # Parameter names by node index, for choices made by name (AdamW's `decays`).
        self._names: dict[int, str] = {}

    def name_parameters(self, names: Mapping[str, int]) -> None:
        """Tells the optimizer each parameter's name (`Network.names`: name to node
        index); the training loop calls it, and `step` reads them off the network."""
        if len(names) != len(self._names):
            self._names = {index: name for name, index in names.items()}

    def step(self, parameters: Parameters, gradients: ParameterGradients) -> Parameters:
        """The parameters after one step; the moments of each parameter with a gradient
        advance once per call. Each new payload is a copy of the old one updated by
        `step_in_place`'s arithmetic."""
        self.steps += 1
        self.name_parameters(parameters.network.names)

        # Parameters.step visits parameters in recording order, so the symbols with a
        # gradient, taken in that order, say which moments each call updates.
        updated = [symbol for symbol in parameters.symbols() if symbol in gradients]
        self._reserve({symbol.index: gradients.of(symbol).numpy() for symbol in updated})
        pending = iter(updated)

        def update(parameter: Tensor, gradient: Tensor) -> Tensor:
            updated = np.array(parameter.numpy(), order="C")
            self._update(next(pending).index, updated, flat(gradient.numpy()))
            return Tensor.adopt(updated)

        return parameters.step(gradients, update)

    def step_in_place(
        self, arrays: Mapping[int, np.ndarray], gradients: ParameterGradients
    ) -> None:
        """One step written into each parameter's own array (keyed by node index, in
        recording order), the moments advancing as `step` advances them."""
        self.steps += 1
        self._reserve(
            {
                index: gradient.numpy()
                for index in arrays
                if (gradient := gradients.by_index(index)) is not None
            }
        )
        for index, array in arrays.items():
            gradient = gradients.by_index(index)
            if gradient is not None:
                self._update(index, array, flat(gradient.numpy()))

    def _reserve(self, gradients: Mapping[int, np.ndarray]) -> None:
        """Makes the moments of every parameter in `gradients` that has none yet, all in
        one zeroed block (first moments, then second ones): one allocation whose size,
        not the heap's free room, says what the state costs (`state_sizes`)."""
        missing = [(key, array) for key, array in gradients.items() if key not in self._moments]
        if not missing:
            return
        dtypes = {array.dtype for _, array in missing}
        for dtype in dtypes:
            group = [(key, array.size) for key, array in missing if array.dtype == dtype]
            total = sum(size for _, size in group)
            block = np.zeros(2 * total, dtype=dtype)
            start = 0
            for key, size in group:
                first = block[start : start + size]
                second = block[total + start : total + start + size]
                self._moments[key] = (first, second, 0)
                start += size

    def _advance(self, key: int, gradient: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Parameter `key`'s moments (zeros at first) and its update count, now one more."""
        moments = self._moments.get(key)
        if moments is None:
            moments = (np.zeros_like(gradient), np.zeros_like(gradient), 0)
        first, second, count = moments
        count += 1
        self._moments[key] = (first, second, count)
        return first, second, count

    def _update(self, key: int, array: np.ndarray, gradient: np.ndarray) -> None:
        raise NotImplementedError

    def state_sizes(self, sizes: Sequence[int]) -> list[int]:
        """The arrays it keeps between steps, in bytes, for parameters of `sizes` bytes:
        two moment estimates of each, in one block (see `_reserve`)."""
        return [2 * sum(sizes)] if sizes else []

    def workspace_bytes(self, dtype: np.dtype, largest: int) -> int:
        """The two chunks the update's temporaries live in, for parameters of at most
        `largest` elements."""
        return Workspace(2).bytes(dtype, largest)


class Adam(MomentOptimizer):
    """Adam (Kingma and Ba), holding its moment estimates per parameter between steps."""

    def __init__(
        self,
        learning_rate: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
    ) -> None:
        super().__init__(learning_rate)
        self.beta1 = float(beta1)
        self.beta2 = float(beta2)
        self.epsilon = float(epsilon)

    def _update(self, key: int, array: np.ndarray, gradient: np.ndarray) -> None:
        """Advances parameter `key`'s moments and writes its update into `array` (the
        gradient flat), chunk by chunk, in the order of the whole-array formulas:
        first = beta1 * first + (1 - beta1) * grad,
        second = beta2 * second + (1 - beta2) * grad * grad,
        parameter - learning_rate * (first / correction1) / (sqrt(second / correction2) + epsilon).
        """
        parameter = array.reshape(-1)
        first, second, count = self._advance(key, gradient)
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


class AdamW(MomentOptimizer):
    """AdamW (Loshchilov and Hutter): Adam with weight decay decoupled from the gradient,
    in the order PyTorch's `torch.optim.AdamW` computes it, per parameter:

        p = p * (1 - lr * weight_decay)        (when `decays(p's shape)`; all by default)
        m = m + (1 - beta1) * (g - m)
        v = v * beta2 + (1 - beta2) * g * g
        p = p - (lr / (1 - beta1^t)) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))

    with t the parameter's own count of updates. `decays` picks the decayed parameters
    (all when None), by shape, by name or both:

    - `lambda shape: shape.rank >= 2` decays weights and embeddings, not biases or norms
      (the usual transformer recipe);
    - `lambda name, shape: not name.endswith("norm.weight")` chooses by the parameter's
      name (`Network.names`, as recorded) and shape;
    - a collection of names (`{"output.weight", ...}`) decays exactly those.

    `step` and `step_in_place` run the same arithmetic, chunk by chunk.
    """

    def __init__(
        self,
        learning_rate: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        epsilon: float = 1e-8,
        weight_decay: float = 0.01,
        decays: Callable[[Shape], bool]
        | Callable[[str, Shape], bool]
        | Collection[str]
        | None = None,
    ) -> None:
        super().__init__(learning_rate)
        self.beta1, self.beta2 = (float(beta) for beta in betas)
        self.epsilon = float(epsilon)
        self.weight_decay = float(weight_decay)
        self.decays = decays
        self._chooses = _choice(decays)
        #: What `step_in_place` knows of the arrays it last stepped (see `_held_runs`).
        self._held: _Held | None = None

    def decayed(self, key: int, shape: Shape) -> bool:
        """Whether parameter `key` (its node index) of `shape` is decayed."""
        return bool(self.weight_decay) and self._chosen(key, shape)

    def _chosen(self, key: int, shape: Shape) -> bool:
        """Whether `decays` picks parameter `key` of `shape` (whatever the weight decay)."""
        if self._chooses is None:
            return True
        by_name, choose = self._chooses
        if not by_name:
            return bool(choose(shape))
        name = self._names.get(key)
        if name is None:
            raise ValueError(
                f"AdamW: decays chooses by name, but parameter %{key} has none "
                f"(name it when recording: tape.parameter(tensor, name))"
            )
        return bool(choose(name, shape))

    def _update(self, key: int, array: np.ndarray, gradient: np.ndarray) -> None:
        """Decays (when chosen) and steps parameter `key` in `array`, chunk by chunk."""
        parameter = array.reshape(-1)
        if self.decayed(key, Shape(array.shape)):
            np.multiply(parameter, 1.0 - self.learning_rate * self.weight_decay, out=parameter)
        first, second, count = self._advance(key, gradient)
        self._step_moments(parameter, gradient, first, second, count)

    def step_in_place(
        self, arrays: Mapping[int, np.ndarray], gradients: ParameterGradients
    ) -> None:
        """`step`'s arithmetic written into each parameter's own array (keyed by node
        index, in recording order). Parameters whose arrays, gradients and moments lie back
        to back (the training loop's blocks: see `adjacent_runs`) and whose update counts
        agree are stepped as one run, a few calls over large chunks instead of a dozen
        small ones a parameter; every element's operations, so its bits, are the same."""
        self.steps += 1
        present = [
            (index, array, flat(gradient.numpy()))
            for index, array in arrays.items()
            if (gradient := gradients.by_index(index)) is not None
        ]
        self._reserve({index: gradient for index, _, gradient in present})
        held = self._held_runs(present)
        keep = 1.0 - self.learning_rate * self.weight_decay
        for parameter in held.decayed:
            np.multiply(parameter, keep, out=parameter)
        counts = [self._advance(index, gradient)[2] for index, _, gradient in present]
        column = [gradient for _, _, gradient in present]
        starts = held.runs.starts | breaks([column])
        starts |= {item for item in range(1, len(counts)) if counts[item] != counts[item - 1]}
        bounds = [*sorted(starts), len(counts)]
        for start, end in itertools.pairwise(bounds):
            parameter, first, second = held.runs.spans(start, end)
            self._step_moments(parameter, span(column[start:end]), first, second, counts[start])

    def _held_runs(self, present: list) -> _Held:
        """The parameters' and moments' flat arrays (which never move), where they break
        into runs and which of them are decayed: found once for these arrays and names,
        then remembered (with the arrays, so the key's ids stay theirs)."""
        key = tuple((index, id(array)) for index, array, _ in present)
        decaying = bool(self.weight_decay)
        held = self._held
        if (
            held is None
            or (held.key, held.decaying) != (key, decaying)
            or held.names is not self._names
        ):
            parameters = [array.reshape(-1) for _, array, _ in present]
            moments = [self._moments[index] for index, _, _ in present]
            decayed = [
                parameter
                for parameter, (index, array, _) in zip(parameters, present)
                if decaying and self._chosen(index, Shape(array.shape))
            ]
            runs = HeldRuns(
                [
                    parameters,
                    [first for first, _, _ in moments],
                    [second for _, second, _ in moments],
                ]
            )
            held = _Held(
                key, [array for _, array, _ in present], self._names, decaying, decayed, runs
            )
            self._held = held
        return held

    def _step_moments(
        self,
        parameter: np.ndarray,
        gradient: np.ndarray,
        first: np.ndarray,
        second: np.ndarray,
        count: int,
    ) -> None:
        """The moments advanced and the (decayed) parameter stepped, over flat arrays, a
        chunk at a time, in the order of PyTorch's formulas (see the class)."""
        step_size = self.learning_rate / (1.0 - self.beta1**count)
        root_correction = (1.0 - self.beta2**count) ** 0.5
        term, denominator = self._workspace.buffers(parameter.dtype)
        for part in chunks(parameter.size):
            grad = gradient[part]
            length = part.stop - part.start
            scratch, root = term[:length], denominator[:length]
            np.subtract(grad, first[part], out=scratch)
            np.multiply(scratch, 1.0 - self.beta1, out=scratch)
            np.add(first[part], scratch, out=first[part])
            np.multiply(second[part], self.beta2, out=second[part])
            np.multiply(grad, grad, out=scratch)
            np.multiply(scratch, 1.0 - self.beta2, out=scratch)
            np.add(second[part], scratch, out=second[part])
            np.sqrt(second[part], out=root)
            np.divide(root, root_correction, out=root)
            np.add(root, self.epsilon, out=root)
            np.divide(first[part], root, out=scratch)
            np.multiply(scratch, -step_size, out=scratch)
            np.add(parameter[part], scratch, out=parameter[part])


@dataclass(frozen=True)
class _Held:
    """What AdamW's `step_in_place` found of the arrays it last stepped."""

    key: tuple
    arrays: list  # held, so the ids in `key` stay these arrays'
    names: dict
    decaying: bool
    decayed: list
    runs: HeldRuns


def _choice(decays) -> tuple[bool, Callable[..., bool]] | None:
    """AdamW's `decays` as (whether it reads names, a predicate): a predicate of the shape,
    of the name and shape (two parameters), or a collection of names."""
    if decays is None:
        return None
    if isinstance(decays, str) or not callable(decays):
        if isinstance(decays, str):
            raise TypeError("AdamW: decays names a collection of names, not one string")
        chosen = frozenset(decays)
        return True, lambda name, shape: name in chosen
    try:
        parameters = inspect.signature(decays).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: the shape form
        return False, decays
    positional = [
        parameter
        for parameter in parameters
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and parameter.default is parameter.empty
    ]
    return len(positional) >= 2, decays
