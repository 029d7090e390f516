"""Shape rules and kernels agree: whatever records also runs, by both routes, and every
kernel output has exactly the shape its rule inferred — also on empty extents."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import ShapeError, Tape, Tensor

small = st.integers(0, 3)


def on(value, number: int, spare: int = 0) -> int:
    """An axis of the value (leaving `spare` trailing axes out), or `number` if none."""
    rank = value.shape.rank - spare
    return number % rank if rank > 0 else number


def within(value, axis: int, numbers: list[int]) -> tuple[int, ...]:
    """Indices inside the axis when it has entries."""
    if 0 <= axis < value.shape.rank and value.shape[axis]:
        return tuple(number % value.shape[axis] for number in numbers)
    return tuple(numbers)


def tight_length(value, axis: int, stride: int, otherwise: int) -> int:
    """The length fold's windows exactly cover (a longer one is the known slack bug)."""
    shape = value.shape
    if shape.rank < 2 or not 0 <= axis < shape.rank - 1:
        return otherwise
    return max((shape[axis] - 1) * max(stride, 1) + shape[-1], 0)


def indices_for(value, axis: int, length: int, numbers: list[int]) -> tuple[int, ...]:
    """As many indices below `length` as the axis has entries, when it can be done."""
    if not 0 <= axis < value.shape.rank or length < 1:
        return tuple(numbers)
    extent = value.shape[axis]
    return tuple(numbers[i % len(numbers)] % length for i in range(extent))


# name -> (how to record it from a Value and drawn integers, how many integers it takes)
RECORDINGS = {
    "neg": (lambda a, n: -a, 0),
    "exp": (lambda a, n: a.exp(), 0),
    "relu": (lambda a, n: a.relu(), 0),
    "heaviside": (lambda a, n: a.heaviside(), 0),
    "abs": (lambda a, n: a.abs(), 0),
    "add_scalar": (lambda a, n: a + 1.0, 0),
    "maximum_self": (lambda a, n: a.maximum(a * 0.5), 0),
    "gram": (lambda a, n: a @ a.T, 0),
    "permute_reversed": (lambda a, n: a.permute(*reversed(range(a.shape.rank))), 0),
    "reshape_flat": (lambda a, n: a.reshape(a.shape.volume), 0),
    "sum": (lambda a, n: a.sum(), 0),
    "full": (lambda a, n: a.sum().full(n[0], n[1]), 2),
    "expand": (lambda a, n: a.sum().expand(n[0], n[1]), 2),
    "sum_along": (lambda a, n: a.sum_along(on(a, n[0])), 1),
    "broadcast_along": (lambda a, n: a.broadcast_along(n[0], n[1]), 2),
    "logsumexp": (lambda a, n: a.logsumexp(on(a, n[0])), 1),
    "pad": (lambda a, n: a.pad([(n[0], n[1])] * a.shape.rank), 2),
    "narrow": (lambda a, n: a.narrow(on(a, n[0]), n[1], n[2]), 3),
    "unfold": (lambda a, n: a.unfold(on(a, n[0]), n[1], n[2]), 3),
    "fold": (
        lambda a, n: a.fold(on(a, n[0], 1), tight_length(a, on(a, n[0], 1), n[2], n[1]), n[2]),
        3,
    ),
    "gather": (lambda a, n: a.gather(on(a, n[0]), within(a, on(a, n[0]), n[1:4])), 4),
    "broadcast_row": (lambda a, n: a + a.sum_along(0) if a.shape.rank else a + a, 0),
    "mean_keepdims": (lambda a, n: a.mean(on(a, n[0]), keepdims=True), 1),
    "sum_to": (
        lambda a, n: a.tape.record("sum", (a,), to_shape=tuple(a.shape)[on(a, n[0]) :]),
        1,
    ),
    "broadcast_to": (lambda a, n: a.broadcast_to(n[0], *a.shape), 1),
    "power": (lambda a, n: a ** (n[0] - 1.5), 1),
    "softmax": (lambda a, n: a.tape.record("softmax", (a,), causal=False), 0),
    "row_scale": (lambda a, n: a.tape.record("row_scale", (a,), eps=1e-5), 0),
    "gelu": (lambda a, n: a.gelu(), 0),
    "scatter": (
        lambda a, n: a.tape.record(
            "scatter",
            (a,),
            axis=on(a, n[0]),
            indices=indices_for(a, on(a, n[0]), n[1], n[2:]),
            length=n[1],
        ),
        6,
    ),
}


def outcome(name: str, extents: list[int], numbers: list[int], record=None):
    """Records `name` (or `record`) on a parameter of `extents`; runs the forward pass and
    both routes. Returns None when recording refuses (cleanly), else both routes' bits."""
    record = record or RECORDINGS[name][0]
    results = {}
    for route in ("engine", "recorded"):
        tape = Tape()
        rng = np.random.default_rng(len(extents))
        value = tape.parameter(Tensor(extents, rng.uniform(0.5, 1.5, extents), np.float32))
        try:
            output = record(value, numbers)
        except (ShapeError, ValueError, TypeError) as error:
            assert str(error)
            return None
        weights = tape.leaf(
            Tensor(output.shape, rng.standard_normal(output.shape.extents), np.float32)
        )
        loss = (output * weights).sum()
        if route == "recorded":
            adjoints = tape.differentiate(loss, [value])
        network = tape.into_network()
        parameters = network.parameters()
        if route == "engine":
            plan = network.entry([loss.symbol]).backward().lower()
            run = plan.forward(parameters)
            computed = run.of(output.symbol).numpy()
            gradient = run.backward(loss.symbol).parameters(parameters).of(value.symbol)
        else:
            plan = network.entry([output.symbol, *adjoints.roots()]).lower()
            run = plan.forward(parameters)
            computed = run.of(output.symbol).numpy()
            gradient = run.recorded_gradients(adjoints).of(value.symbol)
        assert computed.shape == output.shape.extents, f"{name}: kernel shape vs rule"
        assert computed.dtype == np.float32
        assert gradient.shape == value.shape, f"{name}: {route} gradient shape"
        results[route] = (run.of(loss.symbol).numpy().tobytes(), gradient.numpy().tobytes())
    assert results["engine"] == results["recorded"]
    return results


@settings(max_examples=800, deadline=None)
@given(
    name=st.sampled_from(sorted(RECORDINGS)),
    extents=st.lists(small, min_size=0, max_size=3)
    | st.lists(st.integers(1, 3), min_size=2, max_size=3),
    numbers=st.lists(small, min_size=6, max_size=6),
)
def test_what_records_runs_with_the_inferred_shape(name, extents, numbers):
    outcome(name, extents, numbers)


def test_logsumexp_over_an_empty_axis_is_minus_infinity():
    tape = Tape()
    value = tape.parameter(Tensor([2, 0], []))
    result = value.logsumexp(1)
    network = tape.into_network()
    run = network.entry([result.symbol]).lower().forward(network.parameters())
    assert run.of(result.symbol).numpy().tolist() == [-np.inf, -np.inf]


@pytest.mark.parametrize(
    ("extents", "numbers"),
    [
        ([0, 2], [0, 5, 2]),  # no windows onto length 5: the kernel's slice wraps round
        ([0, 1], [0, 0, 1]),  # no windows onto length 0: the derivative unfolds nothing
        ([1, 0], [0, 0, 1]),  # one window of no lanes: the derivative unfolds size 0
    ],
    ids=["no_windows_longer", "no_windows_tight", "empty_lanes"],
)
def test_fold_of_degenerate_windows_is_refused_at_recording(extents, numbers):
    tape = Tape()
    value = tape.parameter(Tensor(extents, np.zeros(extents, np.float32)))
    with pytest.raises(
        ShapeError, match=r"fold: shape .* windows of .* lanes; both must be positive"
    ):
        value.fold(numbers[0], numbers[1], numbers[2])
