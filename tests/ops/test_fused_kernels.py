"""The fused primitives: im2col/col2im, max_pool/max_pool_route/max_pool_pick and
matmul_nt/matmul_tn.

Each is checked four ways: its derivative rule against central finite differences
in float64 by both routes, and both routes bit for bit in float32 (its cases,
the examples each declares in its module, run in test_derivatives and test_route_parity); here,
its kernel against the composed form it replaces (bit for bit where the arithmetic
is the same, to float32 rounding where a summation is regrouped), and its kernel's
bits against every memory layout of its operands.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.allocations import peak_allocation
from tests.support.cases import window as _window
from topos import ShapeError, Tape, Tensor, conv2d, max_pool
from topos.ops import REGISTRY
from topos.tensor import Shape

FUSED = ("im2col", "col2im", "max_pool", "max_pool_route", "max_pool_pick")
FUSED += ("matmul_nt", "matmul_tn")


def kernel(name: str):
    return REGISTRY[name].kernel


def test_every_fused_primitive_is_registered_and_has_a_case():
    assert set(FUSED) <= set(REGISTRY)
    assert all(REGISTRY[name].examples for name in FUSED)


def test_composites_record_the_fused_primitives():
    tape = Tape()
    images = tape.parameter(Tensor.filled([2, 3, 8, 8], 1.0))
    weights = tape.parameter(Tensor.filled([4, 3, 3, 3], 1.0))
    bias = tape.parameter(Tensor.filled([4], 0.0))
    max_pool(conv2d(images, weights, bias, 1, 1).relu(), 2, 2)
    operations = [node.operation for node in tape.nodes]
    assert "im2col" in operations and "max_pool" in operations
    assert "unfold" not in operations and "maximum" not in operations


# Against the composed forms ---------------------------------------------------------------


def _composed(build, arrays, dtype=np.float32):
    """Runs a recording of primitives on arrays (as parameters) and returns the output."""
    tape = Tape(dtype=dtype)
    values = [tape.parameter(Tensor(array.shape, array, dtype=dtype)) for array in arrays]
    output = build(*values)
    network = tape.into_network()
    plan = network.entry([output.symbol]).lower()
    return np.array(plan.forward(network.parameters()).of(output.symbol).numpy())


def _composed_im2col(x, window):
    kernel_height, kernel_width = window.kernel_height, window.kernel_width
    stride, padding = window.stride, window.padding
    batch, channels, _, _ = x.shape
    padded = x.pad(((0, 0), (0, 0), (padding, padding), (padding, padding))) if padding else x
    windows = padded.unfold(2, kernel_height, stride).unfold(3, kernel_width, stride)
    _, _, rows, columns, _, _ = windows.shape
    return windows.permute(0, 2, 3, 4, 5, 1).reshape(
        batch * rows * columns, kernel_height * kernel_width * channels
    )


WINDOWS = [
    ((2, 3, 6, 7), _window()),
    ((2, 16, 8, 8), _window()),
    ((1, 2, 7, 6), _window(stride=2, padding=1)),
    ((2, 3, 6, 5), _window(2, 3, 1, 0)),
    ((1, 2, 9, 9), _window(3, 3, 3, 0)),
    ((1, 1, 5, 5), _window(5, 5, 1, 2)),
]


@pytest.mark.parametrize(("shape", "window"), WINDOWS, ids=str)
def test_im2col_equals_the_composed_form_bit_for_bit(shape, window):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    fused = kernel("im2col")(x, **window)
    composed = _composed(lambda v: _composed_im2col(v, window["window"]), [x])
    assert fused.dtype == np.float32
    assert fused.tobytes() == composed.tobytes()


@pytest.mark.parametrize(("shape", "window"), WINDOWS, ids=str)
def test_col2im_equals_the_composed_adjoint_to_rounding(shape, window):
    # The composed adjoint: fold the column windows, then the row windows, then narrow
    # the padding away. The fused kernel sums the same terms, grouped differently.
    generator = np.random.default_rng(2)
    x = generator.standard_normal(shape)
    patches_shape = kernel("im2col")(x, **window).shape
    patches = generator.standard_normal(patches_shape).astype(np.float32)
    fused = kernel("col2im")(patches, shape=shape, **window)
    exact = np.zeros(shape)
    batch, channels, height, width = shape
    padding, stride = window["window"].padding, window["window"].stride
    padded = np.zeros((batch, channels, height + 2 * padding, width + 2 * padding))
    kh, kw = window["window"].kernel_height, window["window"].kernel_width
    rows = (height + 2 * padding - kh) // stride + 1
    columns = (width + 2 * padding - kw) // stride + 1
    taps = patches.astype(np.float64).reshape(batch, rows, columns, kh, kw, channels)
    for ky in range(kh):
        for kx in range(kw):
            padded[
                :,
                :,
                ky : ky + (rows - 1) * stride + 1 : stride,
                kx : kx + (columns - 1) * stride + 1 : stride,
            ] += taps[:, :, :, ky, kx, :].transpose(0, 3, 1, 2)
    exact = padded[:, :, padding : padding + height, padding : padding + width]
    assert fused.dtype == np.float32 and fused.shape == shape
    np.testing.assert_allclose(fused, exact, rtol=1e-5, atol=1e-5)
    # ...and im2col's adjoint it is: <im2col(x), p> == <x, col2im(p)>.
    forward = kernel("im2col")(x.astype(np.float32), **window).astype(np.float64)
    assert np.isclose(np.sum(forward * patches), np.sum(x * fused), rtol=1e-5)


def test_col2im_sums_in_a_fixed_order_whatever_the_layout():
    shape, window = (2, 16, 8, 8), _window()
    patches = np.random.default_rng(3).standard_normal((128, 144)).astype(np.float32)
    reference = kernel("col2im")(patches, shape=shape, **window)
    fortran = np.asfortranarray(patches)
    strided = np.repeat(patches, 2, axis=1)[:, ::2]
    for layout in (fortran, strided):
        assert kernel("col2im")(layout, shape=shape, **window).tobytes() == reference.tobytes()


def _composed_max_pool(x, size, stride):
    windows = x.unfold(2, size, stride).unfold(3, size, stride)
    batch, channels, rows, columns, _, _ = windows.shape
    lanes = windows.reshape(batch, channels, rows, columns, size * size)
    largest = lanes.narrow(4, 0, 1)
    for lane in range(1, size * size):
        largest = largest.maximum(lanes.narrow(4, lane, 1))
    return largest.reshape(batch, channels, rows, columns)


def _tied(shape, seed):
    """Values on a coarse grid after a relu: most windows hold ties, many all zeros."""
    generator = np.random.default_rng(seed)
    return np.maximum(generator.integers(-3, 3, shape), 0).astype(np.float32)


POOLS = [((2, 3, 8, 8), 2, 2), ((1, 2, 7, 7), 2, 2), ((1, 2, 6, 6), 2, 1), ((1, 2, 7, 7), 3, 2)]


def _channels_last(array):
    return np.ascontiguousarray(array.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


@pytest.mark.parametrize(("shape", "size", "stride"), POOLS, ids=str)
def test_max_pool_and_its_route_equal_the_composed_form(shape, size, stride):
    for x in (_tied(shape, 4), np.random.default_rng(5).standard_normal(shape).astype(np.float32)):
        fused = kernel("max_pool")(x, size=size, stride=stride)
        composed = _composed(lambda v: _composed_max_pool(v, size, stride), [x])
        assert fused.tobytes() == composed.tobytes()
        # The composed form's gradient, by the engine route, against max_pool_route.
        gradient = np.random.default_rng(6).standard_normal(fused.shape).astype(np.float32)

        def build(tape, tensors):
            value = tape.parameter(tensors[0])
            return _composed_max_pool(value, size, stride), [value.symbol]

        tape = Tape()
        value = tape.parameter(Tensor(shape, x))
        pooled = _composed_max_pool(value, size, stride)
        loss = (pooled * tape.leaf(Tensor(fused.shape, gradient))).sum()
        network = tape.into_network()
        parameters = network.parameters()
        run = network.entry([loss.symbol]).backward().lower().forward(parameters)
        expected = run.backward(loss.symbol).parameters(parameters).of(value.symbol).numpy()
        routed = kernel("max_pool_route")(x, gradient, size=size, stride=stride)
        if stride >= size:
            np.testing.assert_array_equal(routed, expected)
        else:  # overlapping windows: a pixel's shares are summed in another grouping
            np.testing.assert_allclose(routed, expected, rtol=1e-6, atol=1e-6)


def test_max_pool_route_sends_ties_to_the_earliest_lane():
    x = np.zeros((1, 1, 2, 4), np.float32)
    x[0, 0, :, 2:] = [[1, 7], [7, 7]]
    gradient = np.array([[[[2.0, 3.0]]]], np.float32)
    routed = kernel("max_pool_route")(x, gradient, size=2, stride=2)
    expected = np.zeros_like(x)
    expected[0, 0, 0, 0] = 2.0  # all zeros: lane 0
    expected[0, 0, 0, 3] = 3.0  # 7 first at lane 1
    np.testing.assert_array_equal(routed, expected)
    picked = kernel("max_pool_pick")(
        x, np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4), size=2, stride=2
    )
    np.testing.assert_array_equal(picked, [[[[0.0, 3.0]]]])


@pytest.mark.parametrize(("shape", "size", "stride"), POOLS, ids=str)
def test_route_and_pick_are_adjoint(shape, size, stride):
    x = _tied(shape, 8).astype(np.float64)
    generator = np.random.default_rng(9)
    pooled = kernel("max_pool")(x, size=size, stride=stride).shape
    g, h = generator.standard_normal(pooled), generator.standard_normal(shape)
    routed = kernel("max_pool_route")(x, g, size=size, stride=stride)
    picked = kernel("max_pool_pick")(x, h, size=size, stride=stride)
    assert np.isclose(np.sum(routed * h), np.sum(g * picked))


@pytest.mark.parametrize(("shape", "size", "stride"), POOLS, ids=str)
def test_pooling_bits_do_not_depend_on_the_layout(shape, size, stride):
    x = _tied(shape, 10)
    pooled = kernel("max_pool")(x, size=size, stride=stride)
    g = np.random.default_rng(11).standard_normal(pooled.shape).astype(np.float32)
    h = np.random.default_rng(12).standard_normal(shape).astype(np.float32)
    routed = kernel("max_pool_route")(x, g, size=size, stride=stride)
    picked = kernel("max_pool_pick")(x, h, size=size, stride=stride)
    for layout in (_channels_last, np.asfortranarray):
        assert kernel("max_pool")(layout(x), size=size, stride=stride).tobytes() == pooled.tobytes()
        again = kernel("max_pool_route")(layout(x), layout(g), size=size, stride=stride)
        assert np.ascontiguousarray(again).tobytes() == routed.tobytes()
        again = kernel("max_pool_pick")(layout(x), layout(h), size=size, stride=stride)
        assert np.ascontiguousarray(again).tobytes() == picked.tobytes()


def test_max_pool_route_gives_the_same_bits_in_any_chunking(monkeypatch):
    import topos.ops.primitives.pooling as pooling

    x = _channels_last(_tied((5, 3, 8, 6), 18))
    g = np.random.default_rng(19).standard_normal((5, 3, 4, 3)).astype(np.float32)
    whole = kernel("max_pool_route")(x, g, size=2, stride=2)
    for elements in (1, 150, 300):  # one image per chunk, two, and a ragged last chunk
        monkeypatch.setattr(pooling, "_CHUNK_ELEMENTS", elements)
        chunked = kernel("max_pool_route")(x, g, size=2, stride=2)
        assert chunked.tobytes() == whole.tobytes()
        np.testing.assert_array_equal(
            kernel("max_pool_route")(x.astype(np.float64), g, size=2, stride=2), whole
        )


def test_im2col_bits_do_not_depend_on_the_layout():
    x = np.random.default_rng(13).standard_normal((2, 5, 6, 7)).astype(np.float32)
    reference = kernel("im2col")(x, **_window())
    for layout in (_channels_last, np.asfortranarray):
        assert kernel("im2col")(layout(x), **_window()).tobytes() == reference.tobytes()


def test_transposed_products_agree_with_matmul_and_ignore_layout():
    generator = np.random.default_rng(14)
    a = generator.standard_normal((300, 40)).astype(np.float32)
    b = generator.standard_normal((300, 24)).astype(np.float32)
    c = generator.standard_normal((50, 24)).astype(np.float32)
    tn = kernel("matmul_tn")(a, b)
    nt = kernel("matmul_nt")(b, c)
    np.testing.assert_allclose(tn, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(nt, b.astype(np.float64) @ c.T, rtol=1e-4, atol=1e-4)
    for layout in (np.asfortranarray, lambda m: np.repeat(m, 2, axis=0)[::2]):
        assert kernel("matmul_tn")(layout(a), layout(b)).tobytes() == tn.tobytes()
        assert kernel("matmul_nt")(layout(b), layout(c)).tobytes() == nt.tobytes()


def test_out_arrays_are_written_and_returned():
    x = np.random.default_rng(15).standard_normal((2, 3, 4, 4)).astype(np.float32)
    window = _window()
    patches = np.empty((32, 27), np.float32)
    assert kernel("im2col")(x, out=patches, **window) is patches
    assert patches.tobytes() == kernel("im2col")(x, **window).tobytes()
    images = np.empty((2, 3, 4, 4), np.float32)
    assert kernel("col2im")(patches, out=images, shape=(2, 3, 4, 4), **window) is images
    assert (
        images.tobytes()
        == np.ascontiguousarray(kernel("col2im")(patches, shape=(2, 3, 4, 4), **window)).tobytes()
    )
    pooled = np.empty((2, 3, 2, 2), np.float32)
    assert kernel("max_pool")(x, out=pooled, size=2, stride=2) is pooled
    routed = np.empty_like(x)
    assert kernel("max_pool_route")(x, pooled, out=routed, size=2, stride=2) is routed
    picked = np.empty((2, 3, 2, 2), np.float32)
    assert kernel("max_pool_pick")(x, x, out=picked, size=2, stride=2) is picked
    np.testing.assert_array_equal(picked, pooled)


def test_out_arrays_of_any_layout_are_written():
    # A memory plan may hand a kernel a slot in another layout than it would choose.
    x = _channels_last(np.random.default_rng(16).standard_normal((2, 3, 4, 4)).astype(np.float32))
    window = _window()
    patches = kernel("im2col")(x, **window)
    slot = np.asfortranarray(np.empty_like(patches))
    assert kernel("im2col")(x, out=slot, **window) is slot
    np.testing.assert_array_equal(slot, patches)
    pooled = kernel("max_pool")(x, size=2, stride=2)
    gradient = np.random.default_rng(17).standard_normal(pooled.shape).astype(np.float32)
    routed = kernel("max_pool_route")(x, gradient, size=2, stride=2)
    for layout in (np.ascontiguousarray, _channels_last, np.asfortranarray):
        slot = layout(np.zeros_like(x))
        assert kernel("max_pool_route")(x, gradient, out=slot, size=2, stride=2) is slot
        np.testing.assert_array_equal(slot, routed)
        slot = layout(np.zeros_like(pooled))
        assert kernel("max_pool")(x, out=slot, size=2, stride=2) is slot
        np.testing.assert_array_equal(slot, pooled)
        images = layout(np.zeros_like(x))
        assert kernel("col2im")(patches, out=images, shape=x.shape, **window) is images
        np.testing.assert_array_equal(images, kernel("col2im")(patches, shape=x.shape, **window))


# Shape rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "operands", "attributes"),
    [
        ("im2col", [(2, 3, 4)], _window()),
        ("im2col", [(1, 1, 2, 2)], _window(5, 5, 1, 0)),
        ("im2col", [(1, 1, 4, 4)], _window(stride=0)),
        ("col2im", [(10, 9)], {"shape": (1, 1, 4, 4), **_window()}),
        ("max_pool", [(2, 3, 4)], {"size": 2, "stride": 2}),
        ("max_pool", [(1, 1, 1, 4)], {"size": 2, "stride": 2}),
        ("max_pool_route", [(1, 1, 4, 4), (1, 1, 3, 2)], {"size": 2, "stride": 2}),
        ("max_pool_pick", [(1, 1, 4, 4), (1, 1, 4, 3)], {"size": 2, "stride": 2}),
        ("matmul_nt", [(3, 4), (2, 5)], {}),
        ("matmul_tn", [(4, 3), (5, 2)], {}),
    ],
)
def test_shape_errors_name_the_primitive(operation, operands, attributes):
    tape = Tape()
    values = [tape.parameter(Tensor.filled(shape, 1.0)) for shape in operands]
    with pytest.raises(ShapeError, match=f"^{operation}: "):
        tape.record(operation, values, **attributes)


def _workspace(name: str, *shapes, **attributes) -> np.ndarray:
    from topos.tensor import Shape

    elements = REGISTRY[name].memory.workspace(*(Shape(s) for s in shapes), **attributes)
    return np.full(elements, np.nan, dtype=np.float32)


def test_max_pool_route_takes_its_temporaries_from_its_workspace():
    """Its winners' running maxima and masks come from the workspace: the same bits
    as without one, and no temporary as large as a lane plane."""
    rng = np.random.default_rng(7)
    operand = rng.standard_normal((64, 32, 16, 16)).astype(np.float32)
    operand[:, :, ::2, ::2] = operand[:, :, 1::2, ::2]  # ties
    gradient = rng.standard_normal((64, 32, 8, 8)).astype(np.float32)
    route = kernel("max_pool_route")
    reference = route(operand, gradient, size=2, stride=2)
    workspace = _workspace("max_pool_route", operand.shape, gradient.shape, size=2, stride=2)
    out = np.empty_like(operand)
    route(operand, gradient, out=out, workspace=workspace, size=2, stride=2)
    assert out.tobytes() == reference.tobytes()
    peak = peak_allocation(
        lambda: route(operand, gradient, out=out, workspace=workspace, size=2, stride=2)
    )
    assert peak < 64 * 1024, peak  # a lane plane of a chunk is 128 KiB
    assert out.tobytes() == reference.tobytes()


def test_col2im_copies_no_operand_into_a_temporary():
    """NumPy copies an in-place add's operand when it cannot prove the add safe;
    col2im's adds are shaped so that it never does (only its small buffers remain)."""
    rng = np.random.default_rng(3)
    shape = (64, 32, 8, 8)
    window = _window(padding=1)
    patches = rng.standard_normal((64 * 8 * 8, 9 * 32)).astype(np.float32)
    workspace = _workspace("col2im", patches.shape, shape=shape, **window)
    col2im = kernel("col2im")
    reference = np.ascontiguousarray(col2im(patches, shape=shape, **window))
    peak = peak_allocation(lambda: col2im(patches, workspace=workspace, shape=shape, **window))
    assert peak < 128 * 1024, peak  # a pass's operand is 576 KiB
    result = col2im(patches, workspace=workspace, shape=shape, **window)
    assert np.ascontiguousarray(result).tobytes() == reference.tobytes()


@pytest.mark.parametrize(
    ("shape", "window"),
    [
        ((23, 16, 8, 8), _window()),
        ((23, 3, 16, 16), _window(phases=2)),
        ((80, 2, 7, 6), _window(2, 3, 2, 2)),
    ],
    ids=str,
)
@pytest.mark.parametrize("layout", ["channels last", "channel planes"])
def test_im2col_pads_a_group_of_images_at_a_time_in_a_dirty_workspace(shape, window, layout):
    # The workspace holds fewer images than the batch, so the kernel pads them a group
    # at a time; whatever the workspace held before must not reach the patches. Images
    # of a few channels laid out in planes ([N, C, H, W]) are copied plane by plane.
    primitive = REGISTRY["im2col"]
    elements = primitive.memory.workspace_elements([Shape(shape)], [None], window)
    batch, channels, height, width = shape
    padding = window["window"].padding
    assert elements < batch * (height + 2 * padding) * (width + 2 * padding) * channels
    x = np.random.default_rng(17).standard_normal(shape).astype(np.float32)
    if layout == "channels last":
        x = _channels_last(x)
    workspace = np.full(elements, np.nan, np.float32)
    patches = kernel("im2col")(x, workspace=workspace, **window)
    composed = _composed(lambda v: _composed_im2col(v, window["window"]), [np.ascontiguousarray(x)])
    # The composed form's rows are in pixel order; take them phase-major.
    phases = window["window"].phases
    out_height, out_width = window["window"].output_extents(height, width)
    composed = composed.reshape(
        batch, out_height // phases, phases, out_width // phases, phases, -1
    ).transpose(2, 4, 0, 1, 3, 5)
    assert patches.tobytes() == np.ascontiguousarray(composed).tobytes()
    assert patches.tobytes() == kernel("im2col")(x, **window).tobytes()
