"""Exactness on random graphs: what issue 10 asks of every graph.

For each random program (parameters passed through view chains over extent-1 axes,
narrows, pads and folds; leaves and Python numbers reused on either side; 2-D and
batched products; sometimes a penalty on the recorded gradients, so the loss is
differentiated twice):

- both routes give the same bytes, in float32 and float64;
- a plan run twice gives the same bytes, and the second run leaves what the first
  returned untouched;
- nothing a run hands out aliases one of its plan's arenas (`check_ownership`);
- the float64 gradients agree with central finite differences.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, event, given, settings

from tests.autodiff.test_route_parity import assert_bitwise_equal, smooth
from tests.support.random_graphs import Program, programs
from tests.support.routes import Outcome, finite_differences, record
from topos import Tensor
from topos.engine.ownership import check_ownership


def _frozen(loss: Tensor, gradients: list[Tensor]) -> Outcome:
    return Outcome(np.array(loss.numpy()), tuple(np.array(g.numpy()) for g in gradients))


def _held(loss: Tensor, gradients: list[Tensor]) -> dict[str, Tensor]:
    return {"loss": loss, **{f"gradient {i}": g for i, g in enumerate(gradients)}}


def _unchanged(held: dict[str, Tensor], frozen: Outcome) -> None:
    """What the first run returned still holds its bytes after the second run."""
    assert held["loss"].numpy().tobytes() == frozen.loss.tobytes()
    for position, expected in enumerate(frozen.gradients):
        actual = held[f"gradient {position}"].numpy()
        assert actual.tobytes() == expected.tobytes(), (
            f"gradient {position} changed after a second run: {expected} became {actual}"
        )


def _twice(plan, loss, symbols, gradients_of) -> Outcome:
    """Runs `plan` twice; `gradients_of(run)` answers a run's parameter gradients. Each
    run's payloads are checked for ownership, and the first run's must survive the second
    untouched, equal to the second's."""
    parameters = plan.network.parameters()

    def once() -> dict[str, Tensor]:
        run = plan.forward(parameters)
        gradients = gradients_of(run, parameters)
        held = _held(run.of(loss), [gradients.of(symbol) for symbol in symbols])
        check_ownership(plan, held)
        return held

    first = once()
    frozen = _frozen(first["loss"], [first[f"gradient {i}"] for i in range(len(symbols))])
    second = once()
    _unchanged(first, frozen)
    _unchanged(second, frozen)
    return frozen


def engine_twice(program: Program, arrays, dtype) -> Outcome:
    """The engine route, its plan run and swept twice."""
    tape, loss, symbols = record(program.build, arrays, program.seed, dtype)
    network = tape.into_network()
    plan = network.entry([loss.symbol]).backward().lower()
    frozen = _twice(
        plan,
        loss.symbol,
        symbols,
        lambda run, parameters: run.backward(loss.symbol).parameters(parameters),
    )
    # Every call of both sweeps was the simulated one, so each wrote where it was planned.
    assert plan.backward_plan(network.index(loss.symbol, "test")).misses == 0
    return frozen


def recorded_twice(program: Program, arrays, dtype) -> Outcome:
    """The recorded route, its forward-only plan run twice."""
    tape, loss, symbols = record(program.build, arrays, program.seed, dtype)
    adjoints = tape.differentiate(loss, symbols)
    plan = tape.into_network().entry(adjoints.roots()).lower()
    return _twice(
        plan, loss.symbol, symbols, lambda run, parameters: run.recorded_gradients(adjoints)
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(max_steps=8, leaves=True, second_order=True))
def test_random_graphs_are_exact(program: Program):
    arrays = program.arrays()
    event("second order" if program.second_order else "first order")
    for dtype, values in (
        (np.float32, [array.astype(np.float32) for array in arrays]),
        (np.float64, arrays),
    ):
        engine = engine_twice(program, values, dtype)
        recorded = recorded_twice(program, values, dtype)
        assert_bitwise_equal(engine, recorded, dtype)
    if not smooth(program, arrays):
        event("finite differences skipped: a corner or a huge value")
        return
    numeric = finite_differences(program.build, arrays, program.seed)
    for analytic, expected in zip(engine.gradients, numeric):
        scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
        np.testing.assert_allclose(analytic, expected, rtol=1e-5, atol=1e-6 * scale)
