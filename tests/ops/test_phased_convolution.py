"""Phase-major patch rows, and conv2d_max_pool built from them and the lane maximum.

What these tests prove, beyond the finite-difference and route-parity checks that
the phased examples of im2col and col2im and the conv2d_max_pool cases in `cases.py`
get from test_derivatives and test_route_parity (the lane primitives themselves: test_lane_maximum):

- `im2col(..., phases=P)` is exactly the `P = 1` patch matrix with its rows reordered
  phase-major by the documented formula (an independent loop over that formula, not
  the kernel's own reshapes), bit for bit, over strides, paddings, kernels, channel
  counts and P; `col2im(..., phases=P)` of phased rows is bit for bit `col2im` of the
  same rows put back in order (the per-pixel summation order does not move), and the
  two are adjoint; a P that does not divide the output is refused by the shape rule.
- `conv2d_max_pool` records `lane_argmax` then `lane_max` over the same lanes (axes
  (2, 4) of the product over trained images whose convolution changes their size;
  axis 0 of phase-major rows over an input or a leaf, or when the convolution keeps
  the size), and against `max_pool(conv2d(...), pool, pool)` in float32 by both
  routes: with the images a parameter and rows in pixel order (the same product as the
  composed form's) the output, the loss and the image gradient bit for bit; with
  phase-major rows (another product, which BLAS may sum differently on another CPU)
  to float32 rounding; the weight and bias gradients to float32 rounding either way
  (their sums over rows are regrouped); and its own two routes bit for bit. On ties
  its winners are the earliest lanes, as max_pool's.
- The recorded route's forward-only plan frees the product (the convolution and the
  lanes viewing it) right after lane_max, before the derivative runs: only the
  winners live on, for lane_place (the composed form keeps its scores instead).
- It refuses a pool that does not tile the output with a one-line ShapeError naming
  itself, before recording anything.
"""

from __future__ import annotations

import numpy as np
import pytest

import topos
from tests.support.cases import on_parameters, window, with_phases
from tests.support.routes import ROUTES, Outcome, engine, recorded
from topos import Conv2d, ShapeError, Tape, Tensor, conv2d, conv2d_max_pool, max_pool
from topos.ops import REGISTRY
from topos.tensor import Shape


def kernel(name: str):
    return REGISTRY[name].kernel


def contiguous_bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def _tied(shape, seed: int) -> np.ndarray:
    """Small integers after a relu: most windows and lane columns hold ties."""
    generator = np.random.default_rng(seed)
    return np.maximum(generator.integers(-3, 3, shape), 0).astype(np.float32)


# Phase-major rows -------------------------------------------------------------------------


def phase_major_order(batch: int, out_height: int, out_width: int, phases: int) -> np.ndarray:
    """`order[r]` is the `P = 1` row that phased row `r` holds, from the documented
    formula: row `((py*P + px)*N + n)*(OH/P * OW/P) + y*(OW/P) + x` is output pixel
    `(P*y + py, P*x + px)` of image `n`."""
    rows, columns = out_height // phases, out_width // phases
    order = np.full(batch * out_height * out_width, -1)
    for py, px, n, y, x in np.ndindex(phases, phases, batch, rows, columns):
        phased = ((py * phases + px) * batch + n) * (rows * columns) + y * columns + x
        order[phased] = (n * out_height + phases * y + py) * out_width + phases * x + px
    assert sorted(order) == list(range(order.size))  # a permutation of the rows
    return order


def _order_for(shape, attributes, phases: int) -> np.ndarray:
    batch, _, height, width = shape
    return phase_major_order(batch, *attributes["window"].output_extents(height, width), phases)


# (images, window, phases): strides 1, 2 and 3, padding 0 and 1, non-square kernels and
# outputs, 1, 3 and 16 channels, P from 2 up to the whole output.
PHASED_WINDOWS = [
    ((2, 3, 8, 8), window(), 2),
    ((2, 16, 8, 8), window(), 2),
    ((1, 1, 6, 6), window(), 3),
    ((2, 16, 6, 6), window(), 3),
    ((2, 3, 4, 6), window(), 2),
    ((1, 2, 4, 4), window(), 4),
    ((1, 2, 7, 7), window(stride=2), 2),
    ((1, 1, 11, 11), window(stride=2), 3),
    ((2, 3, 5, 6), window(2, 3, 1, 0), 2),
    ((1, 16, 9, 9), window(3, 3, 3, 0), 3),
    ((2, 3, 5, 5), window(1, 1, 1, 0), 1),
]


@pytest.mark.parametrize(("shape", "attributes", "phases"), PHASED_WINDOWS, ids=str)
def test_phased_im2col_is_the_plain_patch_matrix_with_rows_reordered(shape, attributes, phases):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    plain = kernel("im2col")(x, **attributes)
    phased = kernel("im2col")(x, **with_phases(attributes, phases))
    assert phased.dtype == np.float32 and phased.shape == plain.shape
    assert phased.tobytes() == plain[_order_for(shape, attributes, phases)].tobytes()
    # The shape rule agrees with the kernel.
    inferred = REGISTRY["im2col"].infer(Shape(shape), **with_phases(attributes, phases))
    assert tuple(inferred) == phased.shape


@pytest.mark.parametrize(("shape", "attributes", "phases"), PHASED_WINDOWS[:8], ids=str)
def test_phased_im2col_bits_ignore_layouts_workspace_and_out(shape, attributes, phases):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    phased = with_phases(attributes, phases)
    reference = kernel("im2col")(x, **phased)
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for layout in (channels_last, np.asfortranarray(x)):
        assert kernel("im2col")(layout, **phased).tobytes() == reference.tobytes()
    elements = REGISTRY["im2col"].memory.workspace(Shape(shape), **phased)
    workspace = np.full(max(elements, 1), np.nan, np.float32)
    for out in (np.empty_like(reference), np.asfortranarray(np.empty_like(reference))):
        result = kernel("im2col")(x, out=out, workspace=workspace, **phased)
        assert result is out
        assert contiguous_bytes(out) == reference.tobytes()


@pytest.mark.parametrize(("shape", "attributes", "phases"), PHASED_WINDOWS, ids=str)
def test_phased_col2im_adds_in_the_plain_order(shape, attributes, phases):
    generator = np.random.default_rng(3)
    rows = kernel("im2col")(np.zeros(shape, np.float32), **attributes).shape
    phased = generator.standard_normal(rows).astype(np.float32)
    plain = np.empty_like(phased)
    plain[_order_for(shape, attributes, phases)] = phased  # the same rows, put back
    expected = contiguous_bytes(kernel("col2im")(plain, shape=shape, **attributes))
    result = kernel("col2im")(phased, shape=shape, **with_phases(attributes, phases))
    assert result.dtype == np.float32 and result.shape == shape
    assert contiguous_bytes(result) == expected
    # ...whatever the accumulator and output slots.
    phased_window = with_phases(attributes, phases)
    elements = REGISTRY["col2im"].memory.workspace(Shape(rows), shape=shape, **phased_window)
    workspace = np.full(elements, np.nan, np.float32)
    for out in (None, np.empty(shape, np.float32), np.asfortranarray(np.empty(shape, np.float32))):
        again = kernel("col2im")(
            phased, out=out, workspace=workspace, shape=shape, **with_phases(attributes, phases)
        )
        assert out is None or again is out
        assert contiguous_bytes(again) == expected


@pytest.mark.parametrize(("shape", "attributes", "phases"), PHASED_WINDOWS, ids=str)
def test_phased_im2col_and_col2im_are_adjoint(shape, attributes, phases):
    generator = np.random.default_rng(4)
    x = generator.standard_normal(shape)
    forward = kernel("im2col")(x, **with_phases(attributes, phases))
    p = generator.standard_normal(forward.shape)
    backward = kernel("col2im")(p, shape=shape, **with_phases(attributes, phases))
    assert forward.dtype == backward.dtype == np.float64
    assert np.isclose(np.sum(forward * p), np.sum(x * backward), rtol=1e-12)


@pytest.mark.parametrize(
    ("shape", "attributes", "phases"),
    [
        ((1, 1, 5, 5), window(), 2),  # 5x5 output
        ((1, 2, 6, 6), window(), 4),  # 6x6 output
        ((1, 2, 4, 6), window(), 3),  # divides the width only
        ((1, 2, 6, 4), window(), 3),  # divides the height only
        ((1, 2, 8, 8), window(stride=2), 3),  # 4x4 output
        ((1, 2, 4, 4), window(), 0),
        ((1, 2, 4, 4), window(), -2),
    ],
    ids=str,
)
def test_phases_that_do_not_divide_the_output_are_refused(shape, attributes, phases):
    tape = Tape()
    images = tape.parameter(Tensor.filled(list(shape), 1.0))
    recorded_before = len(tape)
    with pytest.raises(ShapeError, match=f"^im2col: .*phases {phases}") as caught:
        tape.record("im2col", (images,), **with_phases(attributes, phases))
    assert "\n" not in str(caught.value)
    assert len(tape) == recorded_before
    # col2im's rule refuses the same phases for patches of a plain im2col's shape.
    rows = REGISTRY["im2col"].infer(Shape(shape), **attributes)
    patches = tape.parameter(Tensor.filled(list(rows), 1.0))
    with pytest.raises(ShapeError, match=f"^(col2im|im2col): .*phases {phases}"):
        tape.record("col2im", (patches,), shape=shape, **with_phases(attributes, phases))


def test_phases_are_recorded_only_when_not_one():
    # Plain convolutions' nodes read as they always have. The fused one makes its rows
    # phase-major over images fed as an input or leaf (which a model does not train, so
    # no images' gradient is made), and when the convolution keeps the images' size
    # (convolution_images makes their gradient from phase-major rows); differentiated,
    # the product and the images' gradient say the phases too.
    def attributes_of(express, operation, source, side=4):
        tape = Tape()
        images = getattr(tape, source)(Tensor.filled([2, 3, side, side], 1.0))
        weights = tape.parameter(Tensor.filled([4, 3, 3, 3], 1.0))
        bias = tape.parameter(Tensor.filled([4], 0.0))
        loss = express(images, weights, bias).sum()
        tape.differentiate(loss, [images.symbol, weights.symbol, bias.symbol])
        return [node.attributes for node in tape.nodes if node.operation == operation]

    plain = lambda x, w, b: conv2d(x, w, b, 1, 1)  # noqa: E731
    fused = lambda x, w, b: conv2d_max_pool(x, w, b, 1, 1, 2)  # noqa: E731
    unpadded = lambda x, w, b: conv2d_max_pool(x, w, b, 1, 0, 2)  # noqa: E731
    for operation in ("im2col", "convolution", "convolution_images"):
        for source in ("parameter", "input", "leaf"):
            assert [a["window"].phases for a in attributes_of(plain, operation, source)] == [1]
            assert [a["window"].phases for a in attributes_of(fused, operation, source)] == [2]
        shrunk = attributes_of(unpadded, operation, "parameter", side=6)
        assert [a["window"].phases for a in shrunk] == [1]
        assert [a["window"].phases for a in attributes_of(unpadded, operation, "input", 6)] == [2]


# conv2d_max_pool against max_pool(conv2d(...)) ---------------------------------------------


def build_with(express, source: str = "parameter"):
    """A build recording the images as `source` ("parameter", "input" or "leaf"), the
    weights and bias as parameters, and differentiating every parameter: over an input
    or a leaf the images are not differentiated (conv2d_max_pool's rows are then
    phase-major, its lanes on axis 0)."""

    def build(tape: Tape, tensors: list[Tensor]):
        images = getattr(tape, source)(tensors[0])
        weights, bias = (tape.parameter(tensor) for tensor in tensors[1:])
        wrt = [weights.symbol, bias.symbol]
        if source == "parameter":
            wrt.insert(0, images.symbol)
        return express(images, weights, bias), wrt

    return build


def forward_output(express, arrays, dtype=np.float32, source="parameter") -> np.ndarray:
    """The output of `express` on `arrays` (the images as `source`) by a forward plan."""
    tape = Tape(dtype=dtype)
    output, _ = build_with(express, source)(
        tape, [Tensor(array.shape, array, dtype=dtype) for array in arrays]
    )
    network = tape.into_network()
    run = network.entry([output.symbol]).lower().forward(network.parameters(), defaults=True)
    return np.array(run.of(output.symbol).numpy())


def convolution_arrays(images, filters, seed, tied=False) -> list[np.ndarray]:
    """Images, weights and bias in float32; `tied`: small integers, so that many scores
    are exactly equal and pooling windows hold ties."""
    generator = np.random.default_rng(seed)
    channels = images[1]
    weights_shape = (filters, channels, 3, 3)
    if tied:
        return [
            _tied(images, seed),
            generator.integers(-1, 2, weights_shape).astype(np.float32),
            np.zeros(filters, np.float32),
        ]
    deviation = np.sqrt(2.0 / (9 * channels))
    return [
        generator.standard_normal(images).astype(np.float32),
        (generator.standard_normal(weights_shape) * deviation).astype(np.float32),
        (generator.standard_normal(filters) * 0.1).astype(np.float32),
    ]


def assert_same_bits(first: Outcome, second: Outcome) -> None:
    assert first.loss.tobytes() == second.loss.tobytes()
    for position, (left, right) in enumerate(zip(first.gradients, second.gradients)):
        assert left.dtype == right.dtype == np.float32, position
        assert left.tobytes() == right.tobytes(), f"gradient {position}"


def assert_within_rounding(fused: np.ndarray, composed: np.ndarray, name: str) -> None:
    scale = float(np.max(np.abs(composed)))
    assert scale > 0, name
    np.testing.assert_allclose(fused, composed, rtol=1e-5, atol=1e-6 * scale, err_msg=name)


# (images, filters, stride, padding, pool, tied)
CONVOLUTIONS = [
    ((4, 3, 8, 8), 8, 1, 1, 2, False),  # cifar10's first stage, smaller
    ((2, 16, 8, 8), 32, 1, 1, 2, False),  # its second
    ((2, 3, 8, 8), 4, 2, 1, 2, False),
    ((2, 3, 8, 8), 5, 1, 0, 3, False),
    ((2, 4, 6, 10), 6, 1, 1, 2, False),
    ((3, 3, 8, 8), 4, 1, 1, 2, True),
]


def fused_and_composed(stride: int, padding: int, pool: int):
    def fused(x, w, b):
        return conv2d_max_pool(x, w, b, stride=stride, padding=padding, pool=pool)

    def composed(x, w, b):
        return max_pool(conv2d(x, w, b, stride=stride, padding=padding), pool, pool)

    return fused, composed


@pytest.mark.parametrize("source", ["parameter", "input"])
@pytest.mark.parametrize(
    ("images", "filters", "stride", "padding", "pool", "tied"), CONVOLUTIONS, ids=str
)
def test_conv2d_max_pool_equals_the_composed_form(
    images, filters, stride, padding, pool, tied, source
):
    # Over a parameter whose convolution changes the images' size the lanes are axes
    # (2, 4) of the very product the composed form computes (natural row order), so the
    # output, the loss and the image gradient are its bits by construction. Over an
    # input, or a 3x3 convolution padded by 1 (stride 1), the rows are phase-major:
    # another product, which BLAS may sum differently on another CPU, so they agree to
    # rounding. Either way the fused form's own routes agree bit for bit.
    phased = source != "parameter" or (stride == 1 and padding == 1)
    arrays = convolution_arrays(images, filters, seed=sum(images) + filters, tied=tied)
    fused, composed = fused_and_composed(stride, padding, pool)
    output = forward_output(fused, arrays, source=source)
    expected = forward_output(composed, arrays, source=source)
    assert output.dtype == np.float32 and output.shape == expected.shape
    if not phased:
        assert output.tobytes() == expected.tobytes()
    else:
        assert_within_rounding(output, expected, "output")
    if tied:  # the case really holds tied pooling windows
        scores = forward_output(lambda x, w, b: conv2d(x, w, b, stride, padding), arrays)
        batch, channels, height, width = scores.shape
        windows = scores.reshape(batch, channels, height // pool, pool, width // pool, pool)
        maximal = np.sum(windows == windows.max(axis=(3, 5), keepdims=True), axis=(3, 5))
        assert np.count_nonzero(maximal > 1) >= output.size // 10

    seed = 23
    outcomes = {}
    for route in sorted(ROUTES):
        mine = ROUTES[route](build_with(fused, source), arrays, seed, np.float32)
        theirs = ROUTES[route](build_with(composed, source), arrays, seed, np.float32)
        *image_gradient, weight_gradient, bias_gradient = mine.gradients
        if not phased:
            assert mine.loss.tobytes() == theirs.loss.tobytes(), route
            assert image_gradient[0].tobytes() == theirs.gradients[0].tobytes(), route
        else:
            np.testing.assert_allclose(mine.loss, theirs.loss, rtol=1e-5, err_msg=route)
            for mine_images, theirs_images in zip(image_gradient, theirs.gradients[:1]):
                assert_within_rounding(mine_images, theirs_images, f"{route} images")
        assert_within_rounding(weight_gradient, theirs.gradients[-2], f"{route} weights")
        assert_within_rounding(bias_gradient, theirs.gradients[-1], f"{route} bias")
        outcomes[route] = mine
    assert_same_bits(outcomes["engine"], outcomes["recorded"])


def lane_major(lanes: np.ndarray, axes) -> np.ndarray:
    """`lanes` as `[lane count, entries]`, lanes in row-major order of the lane axes."""
    axes = tuple(axes)
    moved = np.moveaxis(lanes, axes, tuple(range(len(axes))))
    count = int(np.prod(moved.shape[: len(axes)]))
    return moved.reshape(count, -1)


@pytest.mark.parametrize(("source", "axes"), [("parameter", (0,)), ("input", (0,))])
def test_conv2d_max_pool_sends_ties_to_the_earliest_lane(source, axes):
    # Integer data: many windows' maxima are tied. The winners the forward records are
    # the first maximal lanes, in max_pool's row-major window order (the image gradient
    # matching the composed form's, above, shows the same through max_pool_route).
    arrays = convolution_arrays((3, 3, 8, 8), 4, seed=27, tied=True)
    fused, _ = fused_and_composed(1, 1, 2)
    tape = Tape()
    output, _ = build_with(fused, source)(tape, [Tensor(a.shape, a) for a in arrays])
    network = tape.into_network()
    run = (
        network.entry([output.symbol])
        .backward()
        .lower()
        .forward(network.parameters(), defaults=True)
    )
    (argmax,) = [i for i, node in enumerate(network.nodes) if node.operation == "lane_argmax"]
    node = network.nodes[argmax]
    assert node.attributes["axes"] == axes
    lanes = run.of(network.symbol(node.inputs[0])).numpy()
    winners = run.of(network.symbol(argmax)).numpy().reshape(-1)
    flat = lane_major(lanes, axes)
    assert flat.shape[0] == 4
    np.testing.assert_array_equal(winners, np.argmax(flat, axis=0))
    last = flat.shape[0] - 1 - np.argmax(flat[::-1], axis=0)
    assert np.count_nonzero(last != winners) >= winners.size // 10  # ties were there


def test_conv2d_max_pool_with_pool_1_is_conv2d_bit_for_bit():
    arrays = convolution_arrays((2, 3, 5, 5), 4, seed=24)

    def fused(x, w, b):
        return conv2d_max_pool(x, w, b, stride=1, padding=1, pool=1)

    def plain(x, w, b):
        return conv2d(x, w, b, stride=1, padding=1)

    assert forward_output(fused, arrays).tobytes() == forward_output(plain, arrays).tobytes()
    for route in (engine, recorded):
        assert_same_bits(
            route(on_parameters(fused), arrays, 25, np.float32),
            route(on_parameters(plain), arrays, 25, np.float32),
        )


def test_conv2d_express_max_pooled_is_the_layer_convolution_pooled():
    images, weights, bias = convolution_arrays((2, 3, 8, 8), 4, seed=26)

    def output_of(pooled: bool) -> np.ndarray:
        tape = Tape()
        x = tape.parameter(Tensor(images.shape, images))
        layer = Conv2d(tape, Tensor(weights.shape, weights), Tensor(bias.shape, bias), 1, 1)
        output = layer.express_max_pooled(x, 2) if pooled else max_pool(layer.express(x), 2, 2)
        network = tape.into_network()
        run = network.entry([output.symbol]).lower().forward(network.parameters(), defaults=True)
        return np.array(run.of(output.symbol).numpy())

    fused = output_of(True)
    assert fused.shape == (2, 4, 4, 4)
    assert fused.tobytes() == output_of(False).tobytes()


@pytest.mark.parametrize(
    ("source", "lanes", "axes"),
    [
        ("parameter", [4, 32, 4], (0,)),
        ("input", [4, 32, 4], (0,)),
        ("leaf", [4, 32, 4], (0,)),
    ],
)
def test_conv2d_max_pool_records_lane_argmax_then_lane_max(source, lanes, axes):
    tape = Tape()
    images = getattr(tape, source)(Tensor.filled([2, 3, 8, 8], 1.0))
    weights = tape.parameter(Tensor.filled([4, 3, 3, 3], 1.0))
    bias = tape.parameter(Tensor.filled([4], 0.0))
    output = conv2d_max_pool(images, weights, bias, 1, 1, 2)
    assert tuple(output.shape) == (2, 4, 4, 4)
    operations = [node.operation for node in tape.nodes]
    assert operations.count("im2col") == 1
    assert operations.count("lane_argmax") == operations.count("lane_max") == 1
    for absent in ("max_pool", "maximum", "lane_place", "lane_select"):
        assert absent not in operations
    argmax = operations.index("lane_argmax")
    maximum = operations.index("lane_max")
    product = tape.nodes[argmax].inputs[0]
    # lane_max pools the very lanes lane_argmax compared, routed by those winners.
    assert tape.nodes[maximum].inputs == (product, argmax)
    assert list(tape.nodes[product].shape) == lanes
    assert tape.nodes[argmax].attributes == tape.nodes[maximum].attributes == {"axes": axes}
    assert topos.conv2d_max_pool is topos.nn.conv2d_max_pool is conv2d_max_pool


def releases_of(express, source: str):
    """The recorded route's forward-only plan of `(express(...) * weights).sum()` and its
    gradients, with the network and the index of the first node of the derivative."""
    arrays = convolution_arrays((2, 3, 8, 8), 4, seed=28)
    tape = Tape()
    output, wrt = build_with(express, source)(tape, [Tensor(a.shape, a) for a in arrays])
    loss = (output * tape.leaf(Tensor.filled(list(output.shape), 0.5))).sum()
    first_derivative = len(tape)
    adjoints = tape.differentiate(loss, wrt)
    network = tape.into_network()
    plan = network.entry(adjoints.roots()).lower()
    assert plan.posture == "forward" and len(network.nodes) > first_derivative
    return plan, network, first_derivative


def consumers(network, index: int) -> list[int]:
    return [i for i, node in enumerate(network.nodes) if index in node.inputs]


@pytest.mark.parametrize("source", ["input", "parameter"])
def test_a_forward_plan_frees_the_pooled_product_right_after_the_pooling(source):
    # The derivative routes by the winners, not by the product: the recorded route's
    # forward-only plan frees the product (the convolution and the lanes viewing it) as
    # soon as lane_max has read it, before any node of the derivative runs; only the
    # winners (a quarter as large) stay for lane_place. The bias is added to the pooled
    # rows.
    fused, composed = fused_and_composed(1, 1, 2)
    plan, network, first_derivative = releases_of(fused, source)
    operations = [node.operation for node in network.nodes]
    argmax, maximum = operations.index("lane_argmax"), operations.index("lane_max")
    lanes = network.nodes[maximum].inputs[0]
    (product,) = network.nodes[lanes].inputs
    assert operations[lanes] == "reshape" and operations[product] == "convolution"
    for index in (product, lanes):
        assert plan.releases[index] == maximum, (index, plan.releases[index], maximum)
        assert max(consumers(network, index)) <= maximum
        assert plan.liveness_of(index) == f"freed after {maximum}"
    described = plan.describe().splitlines()
    assert described[product].split()[0] == str(product)
    assert described[product].endswith(f"freed after {maximum}")
    # The bias is added to the pooled rows ([rows, F] already: the lanes are phase-major).
    (added,) = consumers(network, maximum)
    assert operations[added] == "add"
    # The winners live on into the derivative, read there by lane_place alone.
    readers = consumers(network, argmax)
    assert readers[0] == maximum and readers[1:]
    assert all(operations[i] == "lane_place" and i >= first_derivative for i in readers[1:])
    assert plan.releases[argmax] == readers[-1] > first_derivative
    # The composed form, whose max_pool_route reads the convolution's output, keeps it
    # into the derivative: the check above is not one any plan passes.
    plan, network, first_derivative = releases_of(composed, source)
    (pooling,) = [i for i, node in enumerate(network.nodes) if node.operation == "max_pool"]
    scores = network.nodes[pooling].inputs[0]
    assert plan.releases[scores] >= first_derivative


@pytest.mark.parametrize(
    ("images", "stride", "padding", "pool", "words"),
    [
        ((2, 3, 7, 7), 1, 1, 2, ["2x2", "7x7", "[2, 3, 7, 7]"]),
        ((2, 3, 8, 8), 1, 0, 4, ["4x4", "6x6"]),
        ((2, 3, 8, 6), 1, 1, 3, ["3x3", "8x6"]),
        ((2, 3, 8, 8), 1, 1, 0, ["pool 0"]),
    ],
    ids=str,
)
def test_conv2d_max_pool_refuses_a_pool_that_does_not_tile(images, stride, padding, pool, words):
    tape = Tape()
    x = tape.parameter(Tensor.filled(list(images), 1.0))
    w = tape.parameter(Tensor.filled([4, images[1], 3, 3], 1.0))
    b = tape.parameter(Tensor.filled([4], 0.0))
    recorded_before = len(tape)
    with pytest.raises(ShapeError, match=r"^conv2d_max_pool: ") as caught:
        conv2d_max_pool(x, w, b, stride=stride, padding=padding, pool=pool)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)
    assert len(tape) == recorded_before  # refused before recording anything


def test_conv2d_max_pool_names_itself_on_mismatched_operands():
    tape = Tape()
    x = tape.parameter(Tensor.filled([2, 3, 8, 8], 1.0))
    w = tape.parameter(Tensor.filled([4, 2, 3, 3], 1.0))
    b = tape.parameter(Tensor.filled([4], 0.0))
    with pytest.raises(ShapeError, match=r"^conv2d_max_pool: .*\[4, 2, 3, 3\]"):
        conv2d_max_pool(x, w, b, padding=1)
    w = tape.parameter(Tensor.filled([4, 3, 3, 3], 1.0))
    with pytest.raises(ShapeError, match=r"^conv2d_max_pool: bias \[3\]"):
        conv2d_max_pool(x, w, tape.parameter(Tensor.filled([3], 0.0)), padding=1)


# Regressions: bugs once reported, since fixed ----------------------------------------------


@pytest.mark.parametrize("composite", ["conv2d", "conv2d_max_pool"])
def test_a_stride_of_zero_is_a_shape_error(composite):
    tape = Tape()
    x = tape.parameter(Tensor.filled([1, 2, 4, 4], 1.0))
    w = tape.parameter(Tensor.filled([3, 2, 3, 3], 1.0))
    b = tape.parameter(Tensor.filled([3], 0.0))
    express = {"conv2d": conv2d, "conv2d_max_pool": conv2d_max_pool}[composite]
    with pytest.raises(ShapeError, match="stride 0"):
        express(x, w, b, stride=0, padding=1)
