"""A user who gets it wrong gets a clear message, raised where the mistake was made."""

from __future__ import annotations

import inspect
import re
import traceback

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topos import (
    SGD,
    Conv2d,
    GraphError,
    Linear,
    Parameters,
    ShapeError,
    Tape,
    Tensor,
    conv2d,
    cross_entropy,
    init,
    log_softmax,
    max_pool,
    softmax,
)


def here() -> int:
    """The line number of the caller."""
    return inspect.currentframe().f_back.f_lineno


def frames_in_this_file(error: BaseException) -> list[traceback.FrameSummary]:
    return [
        frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename == __file__
    ]


def parameter(tape: Tape, *extents: int):
    return tape.parameter(Tensor.filled(list(extents), 1.0, dtype=tape.dtype))


def test_shape_error_is_a_value_error():
    assert issubclass(ShapeError, ValueError)
    assert issubclass(GraphError, ValueError)


def test_shape_mismatch_raises_at_the_recording_line():
    tape = Tape()
    a, b = parameter(tape, 2, 3), parameter(tape, 3, 2)
    with pytest.raises(ShapeError) as caught:
        line = here() + 1
        _ = a + b
    assert frames_in_this_file(caught.value)[-1].lineno == line
    message = str(caught.value)
    assert "add" in message and "[2, 3]" in message and "[3, 2]" in message
    assert len(tape) == 2  # nothing was recorded


# (name, operand shapes, the offending recording, words its message must hold)
MISMATCHES = [
    ("sub", [(2, 3), (2, 4)], lambda a, b: a - b, ["sub", "[2, 3]", "[2, 4]"]),
    ("mul", [(4,), (2, 2)], lambda a, b: a * b, ["mul", "[4]", "[2, 2]"]),
    # [1, 3] and [3, 1] broadcast to [3, 3], as NumPy's rules say; these do not.
    ("div", [(2, 3), (4, 1)], lambda a, b: a / b, ["div", "[2, 3]", "[4, 1]"]),
    ("maximum", [(2,), (3,)], lambda a, b: a.maximum(b), ["maximum", "[2]", "[3]"]),
    ("matmul", [(2, 3), (2, 3)], lambda a, b: a @ b, ["matmul", "[2, 3]"]),
    ("matmul_rank", [(), (3, 2)], lambda a, b: a @ b, ["matmul", "rank-0", "3, 2"]),
    ("matmul_vector", [(3,), (2, 2)], lambda a, b: a @ b, ["matmul", "[1, 3]", "[2, 2]"]),
    ("reshape", [(2, 3)], lambda a: a.reshape(4, 2), ["reshape", "[2, 3]", "[4, 2]"]),
    ("permute", [(2, 3)], lambda a: a.permute(0, 0), ["permute", "[2, 3]"]),
    ("sum_along", [(2, 3)], lambda a: a.sum_along(2), ["sum", "axis 2", "[2, 3]"]),
    ("narrow", [(2, 3)], lambda a: a.narrow(1, 2, 2), ["narrow", "[2, 3]"]),
    ("unfold", [(2, 3)], lambda a: a.unfold(1, 4, 1), ["unfold", "[2, 3]"]),
    ("pad", [(2, 3)], lambda a: a.pad([(1, 1)]), ["pad", "[2, 3]"]),
    ("gather", [(2, 3)], lambda a: a.gather(1, (0, 3)), ["gather", "[2, 3]"]),
    ("full", [(2,)], lambda a: a.full(2, 2), ["broadcast", "full", "[2]"]),
    ("expand", [(2,)], lambda a: a.expand(3), ["expand", "[2]", "extent 2"]),
    ("expand_rank", [(2, 3)], lambda a: a.expand(3), ["expand", "[2, 3]"]),
    ("logsumexp", [(2, 3)], lambda a: a.logsumexp(2), ["logsumexp", "[2, 3]"]),
    ("log_softmax", [(2, 3)], lambda a: log_softmax(a, axis=2), ["logsumexp", "[2, 3]"]),
    ("softmax", [(2, 3)], lambda a: softmax(a, axis=-3), ["logsumexp", "[2, 3]"]),
    (
        "conv2d_channels",
        [(1, 3, 5, 5), (4, 2, 3, 3), (4,)],
        lambda x, w, b: conv2d(x, w, b),
        ["conv2d", "[1, 3, 5, 5]", "[4, 2, 3, 3]"],
    ),
    (
        "conv2d_kernel",
        [(1, 2, 2, 2), (4, 2, 3, 3), (4,)],
        lambda x, w, b: conv2d(x, w, b),
        ["(conv2d|unfold|im2col)", r"\[1, 2, 2, 2\]"],
    ),
    ("max_pool_rank", [(3, 4, 4)], lambda x: max_pool(x, 2, 2), ["max_pool", "[3, 4, 4]"]),
    (
        "cross_entropy",
        [(4, 10), (4, 9)],
        lambda y, t: cross_entropy(y, t),
        ["cross_entropy", "[4, 10]", "[4, 9]"],
    ),
    (
        "cross_entropy_empty_batch",
        [(0, 10), (0, 10)],
        lambda y, t: cross_entropy(y, t),
        ["cross_entropy", r"\[0, 10\]", "no rows"],
    ),
    (
        "conv2d_stride",
        [(1, 2, 5, 5), (4, 2, 3, 3), (4,)],
        lambda x, w, b: conv2d(x, w, b, stride=0),
        ["conv2d", "stride 0"],
    ),
]


@pytest.mark.parametrize(
    ("shapes", "record", "words"), [m[1:] for m in MISMATCHES], ids=[m[0] for m in MISMATCHES]
)
def test_each_mismatch_names_the_operation_and_the_shapes(shapes, record, words):
    tape = Tape()
    operands = [parameter(tape, *shape) for shape in shapes]
    with pytest.raises(ShapeError) as caught:
        record(*operands)
    # The last frame of this file is the offending recording itself, not a later step.
    frame = frames_in_this_file(caught.value)[-1]
    assert frame.name == "<lambda>"
    assert frame.lineno == record.__code__.co_firstlineno
    for word in words:
        assert re.search(word, str(caught.value)) or word in str(caught.value), word


def test_linear_input_mismatch_names_the_shapes():
    tape = Tape()
    layer = Linear(tape, Tensor.filled([4, 2], 0.5), Tensor.filled([2], 0.0))
    rows = parameter(tape, 3, 5)
    with pytest.raises(ShapeError, match=r"matmul.*\[3, 5\].*\[4, 2\]"):
        layer.express(rows)


def test_layers_refuse_mismatched_payloads():
    tape = Tape()
    with pytest.raises(ShapeError, match=r"Linear.*\[4, 2\].*\[3\]"):
        Linear(tape, Tensor.filled([4, 2], 0.5), Tensor.filled([3], 0.0))
    with pytest.raises(ShapeError, match=r"Conv2d.*\[4, 2, 3\].*\[4\]"):
        Conv2d(tape, Tensor.filled([4, 2, 3], 0.5), Tensor.filled([4], 0.0))


def small_network():
    tape = Tape()
    images = tape.input(Tensor.filled([2, 3], 0.0))
    weights = parameter(tape, 3, 4)
    scores = (images @ weights).tanh()
    loss = scores.sum()
    return tape, tape.into_network(), images.symbol, weights.symbol, scores.symbol, loss.symbol


def test_a_feed_of_the_wrong_shape_names_the_input_and_both_shapes():
    _, network, images, _, _, loss = small_network()
    plan = network.entry([loss]).lower()
    with pytest.raises(ShapeError) as caught:
        plan.forward(network.parameters(), {images: Tensor.filled([3, 2], 1.0)})
    message = str(caught.value)
    assert f"input %{images.index}" in message
    assert "[3, 2]" in message and "[2, 3]" in message


def test_a_feed_of_the_wrong_dtype_or_kind_is_refused():
    _, network, images, weights, _, loss = small_network()
    plan = network.entry([loss]).lower()
    with pytest.raises(TypeError, match="float64"):
        plan.forward(network.parameters(), {images: Tensor.filled([2, 3], 1.0, np.float64)})
    with pytest.raises(TypeError, match="str, not a Tensor"):
        plan.forward(network.parameters(), {images: "zeros"})
    with pytest.raises(GraphError, match="not an input"):
        plan.forward(network.parameters(), {weights: Tensor.filled([3, 4], 1.0)})


def test_symbols_of_another_network_are_refused_everywhere():
    _, network, _, _, _, loss = small_network()
    _, other, other_images, other_weights, _, other_loss = small_network()
    parameters = network.parameters()
    plan = network.entry([loss]).backward().lower()
    run = plan.forward(parameters, defaults=True)
    attempts = [
        lambda: network.entry([other_loss]),
        lambda: plan.forward(parameters, {other_images: Tensor.filled([2, 3], 1.0)}),
        lambda: plan.forward(other.parameters(), defaults=True),
        lambda: run.of(other_loss),
        lambda: run.backward(other_loss),
        lambda: parameters.of(other_weights),
        lambda: run.backward(loss).parameters(other.parameters()),
        lambda: run.backward(loss).parameters(parameters).of(other_weights),
    ]
    for attempt in attempts:
        with pytest.raises(GraphError, match="another network"):
            attempt()
    other_run = (
        other.entry([other_loss]).backward().lower().forward(other.parameters(), defaults=True)
    )
    other_gradients = other_run.backward(other_loss).parameters(other.parameters())
    with pytest.raises(GraphError, match="another network"):
        parameters.step(other_gradients, SGD(0.1).update)


def test_values_of_another_tape_are_refused():
    first, second = Tape(), Tape()
    a, b = parameter(first, 2), parameter(second, 2)
    with pytest.raises(GraphError, match="another tape"):
        _ = a + b
    with pytest.raises(GraphError):
        first.differentiate(a.sum(), [b])


def test_backward_on_a_forward_posture_run_says_how_to_fix_it():
    _, network, _, _, _, loss = small_network()
    run = network.entry([loss]).lower().forward(network.parameters(), defaults=True)
    with pytest.raises(GraphError) as caught:
        run.backward(loss)
    assert "forward posture" in str(caught.value)
    assert "backward()" in str(caught.value)


def test_a_sealed_tape_records_no_more():
    tape, _, _, _, _, _ = small_network()
    value = tape.value(tape.nodes and _first_symbol(tape))
    attempts = [
        lambda: tape.parameter(Tensor.filled([2], 1.0)),
        lambda: tape.input(Tensor.filled([2], 1.0)),
        lambda: tape.leaf(Tensor.filled([2], 1.0)),
        lambda: value + value,
        lambda: value.exp(),
        lambda: value * 2.0,
        lambda: tape.differentiate(value.sum(), [value]),
        lambda: tape.into_network(),
    ]
    for attempt in attempts:
        with pytest.raises(GraphError, match="sealed"):
            attempt()


def _first_symbol(tape: Tape):
    from topos import Symbol

    return Symbol(tape.origin, 0)


def test_a_non_scalar_target_has_no_gradient_on_either_route():
    tape = Tape()
    weights = parameter(tape, 3, 4)
    scores = weights.tanh()
    with pytest.raises(ShapeError, match=r"\[3, 4\].*scalar"):
        tape.differentiate(scores, [weights])
    network = tape.into_network()
    run = (
        network.entry([scores.symbol])
        .backward()
        .lower()
        .forward(network.parameters(), defaults=True)
    )
    with pytest.raises(ShapeError, match=r"\[3, 4\].*scalar"):
        run.backward(scores.symbol)


@pytest.mark.parametrize("factory", [init.kaiming, init.xavier])
@pytest.mark.parametrize("extents", [[]])  # rank 3 and up are convolution kernels now
def test_an_init_factory_refuses_a_shape_it_does_not_serve(factory, extents):
    with pytest.raises(ValueError) as caught:
        factory(7)(extents)
    message = str(caught.value)
    assert factory.__name__ in message
    assert f"rank {len(extents)}" in message


@pytest.mark.parametrize(
    "factory",
    [init.kaiming(3), init.xavier(3), init.normal(3, 1.0), init.uniform(3, 1.0)],
    ids=["kaiming", "xavier", "normal", "uniform"],
)
def test_an_init_factory_refuses_a_negative_extent(factory):
    with pytest.raises(ShapeError, match=r"\[1, -1\]"):
        factory([1, -1])


def test_parameters_step_refuses_an_update_that_changes_a_shape():
    _, network, _, weights, _, loss = small_network()
    parameters = network.parameters()
    gradients = (
        network.entry([loss]).backward().lower().forward(parameters, defaults=True).backward(loss)
    )
    gradients = gradients.parameters(parameters)
    with pytest.raises(ShapeError) as caught:
        parameters.step(gradients, lambda p, g: Tensor.filled([4, 3], 0.0))
    message = str(caught.value)
    assert "Parameters.step" in message and "[3, 4]" in message and "[4, 3]" in message
    with pytest.raises(ShapeError, match="float64"):
        parameters.step(gradients, lambda p, g: Tensor.filled([3, 4], 0.0, np.float64))
    with pytest.raises(TypeError, match="ndarray"):
        parameters.step(gradients, lambda p, g: p.numpy() * 2)
    with pytest.raises(TypeError, match="list"):
        parameters.step([gradients.of(weights)], SGD(0.1).update)
    with pytest.raises(TypeError, match="ndarray, not a Tensor"):
        parameters.step({weights: gradients.of(weights).numpy()}, SGD(0.1).update)
    # The refused steps left the parameters as they were.
    assert parameters.of(weights) == network.parameters().of(weights)


def test_run_of_a_freed_buffer_says_when_it_was_freed():
    _, network, _, _, scores, loss = small_network()
    plan = network.entry([loss]).lower()
    run = plan.forward(network.parameters(), defaults=True)
    with pytest.raises(GraphError, match=rf"%{scores.index} was freed after {loss.index}"):
        run.of(scores)
    assert isinstance(run.of(loss).scalar(), np.float32)


def test_parameters_is_not_a_place_for_other_nodes():
    _, network, images, _, _, _ = small_network()
    with pytest.raises(GraphError, match="not a parameter"):
        network.parameters().of(images)
    assert isinstance(network.parameters(), Parameters)


# Throwing random shapes and values at the recording API ---------------------------------

extents = st.lists(st.integers(-1, 4), max_size=4)
small_ints = st.integers(-3, 5)
CLEAN_ERRORS = (ShapeError, ValueError, TypeError)


def recording_calls(draw, values):
    """One random call of the recording API over `values`."""
    a = draw(st.sampled_from(values))
    b = draw(st.sampled_from(values))
    ints = lambda: draw(small_ints)  # noqa: E731
    calls = [
        lambda: a + b,
        lambda: a - 2,
        lambda: 3.0 * a,
        lambda: a / b,
        lambda: a @ b,
        lambda: a.maximum(b),
        lambda: a @ 2.0,
        lambda: a + "x",
        lambda: a.reshape(*draw(st.lists(small_ints, max_size=4))),
        lambda: a.reshape(draw(st.lists(small_ints, max_size=4))),
        lambda: a.permute(*draw(st.lists(small_ints, max_size=4))),
        lambda: a.T,
        lambda: a.sum(),
        lambda: a.mean(),
        lambda: a.sum_along(ints()),
        lambda: a.broadcast_along(ints(), ints()),
        lambda: a.expand(*draw(st.lists(small_ints, max_size=3))),
        lambda: a.full(*draw(st.lists(small_ints, max_size=3))),
        lambda: a.logsumexp(ints()),
        lambda: a.pad(draw(st.lists(st.tuples(small_ints, small_ints), max_size=4))),
        lambda: a.pad(draw(st.lists(st.lists(small_ints, max_size=3), max_size=4))),
        lambda: a.narrow(ints(), ints(), ints()),
        lambda: a.unfold(ints(), ints(), ints()),
        lambda: a.fold(ints(), ints(), ints()),
        lambda: a.gather(ints(), draw(st.lists(small_ints, max_size=4))),
        lambda: a.sum_along(draw(st.sampled_from([1.0, None, "0", True]))),
        lambda: conv2d(a, b, draw(st.sampled_from(values)), ints(), ints()),
        lambda: max_pool(a, ints(), ints()),
        lambda: cross_entropy(a, b),
        lambda: log_softmax(a, ints()),
        lambda: softmax(a, ints()),
    ]
    return draw(st.sampled_from(calls))


def tensor_calls(draw):
    """One random call building a Tensor, a layer or an initializer's draw."""
    shape = draw(extents)
    data = draw(st.lists(st.floats(-2, 2), max_size=6))
    ints = lambda: draw(small_ints)  # noqa: E731
    tape = Tape()
    calls = [
        lambda: Tensor(shape, data),
        lambda: Tensor(shape, draw(st.sampled_from([None, "ab", [[1], [2, 3]], {}]))),
        lambda: Tensor(shape, data, dtype=draw(st.sampled_from([np.int32, np.float16, "float64"]))),
        lambda: Tensor.filled(shape, 1.0),
        lambda: Tensor.selection(draw(st.lists(small_ints, max_size=4)), ints()),
        lambda: Tensor.filled(shape, 1.0).broadcast_like(Tensor.filled(draw(extents), 1.0)),
        lambda: Tensor.filled(shape, 1.0) + Tensor.filled(draw(extents), 1.0),
        lambda: Tensor.filled(shape, 1.0).scalar(),
        lambda: init.kaiming(ints())(shape),
        lambda: init.xavier(ints())(shape),
        lambda: init.normal(ints(), 1.0)(shape),
        lambda: Linear(tape, Tensor.filled(shape, 1.0), Tensor.filled(draw(extents), 0.0)),
        lambda: Conv2d(
            tape, Tensor.filled(shape, 1.0), Tensor.filled(draw(extents), 0.0), ints(), ints()
        ),
        lambda: tape.parameter(np.zeros(3)),
        lambda: tape.input(Tensor.filled(shape, 1.0, np.float64)),
    ]
    return draw(st.sampled_from(calls))


def assert_clean(call) -> None:
    try:
        call()
    except CLEAN_ERRORS as error:
        assert str(error).strip(), f"{type(error).__name__} without a message"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_misuse_of_the_recording_api_fails_cleanly(data):
    tape = Tape()
    values = []
    for shape in data.draw(
        st.lists(st.lists(st.integers(0, 4), max_size=4), min_size=1, max_size=3)
    ):
        values.append(tape.parameter(Tensor.filled(shape, 0.5)))
    for _ in range(data.draw(st.integers(1, 4))):
        assert_clean(recording_calls(data.draw, values))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_misuse_of_tensors_layers_and_initializers_fails_cleanly(data):
    assert_clean(tensor_calls(data.draw))


def test_feeds_may_be_arrays_of_the_networks_dtype_but_not_other_things():
    _, network, images, _, _, loss = small_network()
    plan = network.entry([loss]).lower()
    parameters = network.parameters()
    as_tensor = plan.forward(parameters, {images: Tensor.filled([2, 3], 0.5)}).of(loss)
    as_array = plan.forward(parameters, {images: np.full((2, 3), 0.5, np.float32)}).of(loss)
    assert as_array == as_tensor
    # Another dtype is refused as an array exactly as it is as a Tensor (issue 41).
    with pytest.raises(TypeError, match="is float64; the network computes in float32"):
        plan.forward(parameters, {images: np.full((2, 3), 0.5)})
    with pytest.raises(ShapeError, match=r"\[3, 2\]"):
        plan.forward(parameters, {images: np.zeros((3, 2), np.float32)})
    with pytest.raises(TypeError, match="is a list, not a Tensor or a NumPy array"):
        plan.forward(parameters, {images: [[0.5] * 3] * 2})


def test_an_index_inputs_feed_must_be_indices_of_its_shape():
    from topos.indices import Indices
    from topos.nn import embedding

    tape = Tape()
    tokens = tape.input(Indices.of([0, 1, 2], 5))
    table = tape.parameter(Tensor.filled([5, 2], 1.0))
    total = embedding(table, tokens).sum()
    network = tape.into_network()
    plan = network.entry([total.symbol]).lower()
    parameters = network.parameters()
    index = tokens.symbol.index
    assert plan.forward(parameters, {tokens.symbol: np.array([4, 0, 1])}).of(total.symbol)
    with pytest.raises(
        ShapeError,
        match=rf"^forward: the feed for index input %{index} has shape \[2\] but the input "
        r"was recorded with shape \[3\]$",
    ):
        plan.forward(parameters, {tokens.symbol: np.array([0, 1])})
    with pytest.raises(
        TypeError,
        match=rf"^forward: the feed for index input %{index} is a list, not Indices or an "
        r"integer array$",
    ):
        plan.forward(parameters, {tokens.symbol: [0, 1, 2]})


def test_bias_free_layers_name_their_missing_bias_in_a_mismatch():
    tape = Tape()
    with pytest.raises(ShapeError, match=r"Linear.*\[4, 2, 1\].*no bias"):
        Linear(tape, Tensor.filled([4, 2, 1], 0.5), None)
