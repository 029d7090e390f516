"""One differentiable expression through the engine route, the recorded route and
central finite differences, so that tests can compare the three.

An expression is built by `build(tape, tensors) -> (output, parameter symbols)`;
the output is reduced to a scalar loss by a fixed random weighting recorded on
the tape, `(output * weights).sum()`, so that every output element matters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from topos import Parameters, Symbol, Tape, Tensor, Value

Build = Callable[[Tape, list[Tensor]], tuple[Value, list[Symbol]]]


@dataclass(frozen=True)
class Outcome:
    """The loss and the gradient of each parameter, as NumPy arrays."""

    loss: np.ndarray
    gradients: tuple[np.ndarray, ...]


def weighting(shape: Sequence[int], seed: int) -> np.ndarray:
    """The fixed float64 weights that reduce an output of `shape` to a scalar."""
    return np.random.default_rng(seed).standard_normal(tuple(shape))


def record(
    build: Build, arrays: Sequence[np.ndarray], seed: int, dtype
) -> tuple[Tape, Value, list[Symbol]]:
    """Records the expression and its weighted scalar loss on a fresh tape of `dtype`."""
    tape = Tape(dtype=dtype)
    tensors = [Tensor(array.shape, array, dtype=dtype) for array in arrays]
    output, parameters = build(tape, tensors)
    weights = tape.leaf(Tensor(output.shape, weighting(output.shape, seed), dtype=dtype))
    return tape, (output * weights).sum(), parameters


def engine(build: Build, arrays: Sequence[np.ndarray], seed: int, dtype) -> Outcome:
    """The engine route: a retain plan, `run.backward(loss).parameters(parameters)`."""
    tape, loss, symbols = record(build, arrays, seed, dtype)
    network = tape.into_network()
    parameters = network.parameters()
    plan = network.entry([loss.symbol]).backward().lower()
    assert plan.posture == "retain"
    # A case's inputs carry their fixed payloads as recorded defaults, used on purpose.
    run = plan.forward(parameters, defaults=True)
    gradients = run.backward(loss.symbol).parameters(parameters)
    return Outcome(
        np.array(run.of(loss.symbol).numpy()),
        tuple(np.array(gradients.of(symbol).numpy()) for symbol in symbols),
    )


def recorded(build: Build, arrays: Sequence[np.ndarray], seed: int, dtype) -> Outcome:
    """The recorded route: `differentiate`, a forward-only plan, `recorded_gradients`."""
    tape, loss, symbols = record(build, arrays, seed, dtype)
    adjoints = tape.differentiate(loss, symbols)
    network = tape.into_network()
    parameters = network.parameters()
    plan = network.entry(adjoints.roots()).lower()
    assert plan.posture == "forward"
    # A case's inputs carry their fixed payloads as recorded defaults, used on purpose.
    run = plan.forward(parameters, defaults=True)
    gradients = run.recorded_gradients(adjoints)
    return Outcome(
        np.array(run.of(loss.symbol).numpy()),
        tuple(np.array(gradients.of(symbol).numpy()) for symbol in symbols),
    )


ROUTES = {"engine": engine, "recorded": recorded}


def finite_differences(
    build: Build, arrays: Sequence[np.ndarray], seed: int, step: float = 1e-6
) -> tuple[np.ndarray, ...]:
    """Central differences of the float64 loss with respect to every parameter element."""
    tape, loss, symbols = record(build, arrays, seed, np.float64)
    network = tape.into_network()
    plan = network.entry([loss.symbol]).lower()
    initial = network.parameters()
    payloads = {symbol.index: initial.of(symbol).numpy() for symbol in network.parameter_symbols()}

    def loss_at(index: int, perturbed: np.ndarray) -> float:
        tensors = {i: Tensor(array.shape, array, dtype=np.float64) for i, array in payloads.items()}
        tensors[index] = Tensor(perturbed.shape, perturbed, dtype=np.float64)
        run = plan.forward(Parameters(network, tensors), defaults=True)
        return float(run.of(loss.symbol).scalar())

    gradients = []
    for symbol in symbols:
        base = np.array(payloads[symbol.index], dtype=np.float64)
        gradient = np.zeros_like(base)
        for position in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[position] += step
            down[position] -= step
            gradient[position] = (loss_at(symbol.index, up) - loss_at(symbol.index, down)) / (
                2 * step
            )
        gradients.append(gradient)
    return tuple(gradients)


def operations(build: Build, arrays: Sequence[np.ndarray]) -> set[str]:
    """The operations the expression records (before the weighting)."""
    tape = Tape(dtype=np.float64)
    build(tape, [Tensor(array.shape, array, dtype=np.float64) for array in arrays])
    return {node.operation for node in tape.nodes}
