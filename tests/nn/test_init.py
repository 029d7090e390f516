"""Initializers against an independent scalar implementation with `math` and plain ints."""

import math
import struct

import numpy as np
import pytest

from topos.nn import init
from topos.tensor import Shape

MASK = (1 << 64) - 1


def scalar_units(state: int):
    """splitmix64 unit draws, one at a time, in plain Python integers."""
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield ((z ^ (z >> 31)) >> 11) / 2**53


def float32_bits(value: float) -> int:
    """The bits of `value` rounded to float32 by the C cast, not by NumPy."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def scalar_normals(seed: int, deviation: float, count: int) -> list[int]:
    units = scalar_units(seed)
    bits = []
    for _ in range(count):
        first, second = next(units), next(units)
        standard = math.sqrt(-2.0 * math.log(1.0 - first)) * math.cos(2.0 * math.pi * second)
        bits.append(float32_bits(standard * deviation))
    return bits


def scalar_uniforms(seed: int, scale: float, count: int) -> list[int]:
    units = scalar_units(seed)
    return [float32_bits((2.0 * next(units) - 1.0) * scale) for _ in range(count)]


def bits_of(tensor) -> list[int]:
    array = tensor.numpy()
    assert array.dtype == np.float32
    return array.reshape(-1).view(np.uint32).tolist()


def test_normal_matches_the_scalar_libm_reference_on_a_large_sample():
    deviation = math.sqrt(2.0 / 27.0)
    tensor = init.normal(21, deviation)((200, 500))
    assert tensor.shape == (200, 500)
    assert bits_of(tensor) == scalar_normals(21, deviation, 200 * 500)


def test_uniform_matches_the_scalar_reference():
    tensor = init.uniform(7, 0.25)([30, 40])
    assert bits_of(tensor) == scalar_uniforms(7, 0.25, 1200)


def test_kaiming_draws_normals_with_deviation_from_the_inputs():
    tensor = init.kaiming(24)(Shape([1024, 10]))
    assert tensor.shape == (1024, 10)
    assert bits_of(tensor) == scalar_normals(24, math.sqrt(2.0 / 1024), 10240)


def test_xavier_draws_uniforms_within_the_fan_bound():
    tensor = init.xavier(5)((20, 12))
    assert bits_of(tensor) == scalar_uniforms(5, math.sqrt(6.0 / 32), 240)


def test_calling_twice_continues_the_stream():
    weights = init.normal(3, 0.5)
    first, second = weights([4, 5]), weights([7])
    assert bits_of(first) + bits_of(second) == scalar_normals(3, 0.5, 27)
    uniform = init.uniform(3, 2.0)
    assert bits_of(uniform(())) + bits_of(uniform([2, 2])) == scalar_uniforms(3, 2.0, 5)


def test_rank_zero_shape_draws_one_value():
    tensor = init.normal(9, 1.0)(())
    assert tensor.shape.rank == 0
    assert bits_of(tensor) == scalar_normals(9, 1.0, 1)


@pytest.mark.parametrize("factory", [init.kaiming, init.xavier])
def test_rank_one_shapes_give_zeros_and_draw_nothing(factory):
    weights = factory(24)
    bias = weights([10])
    assert bias.shape == (10,)
    assert not np.any(bias.numpy())
    assert bits_of(weights([6, 10])) == bits_of(factory(24)([6, 10]))


@pytest.mark.parametrize(("factory", "name"), [(init.kaiming, "kaiming"), (init.xavier, "xavier")])
def test_a_rank_zero_shape_is_refused_naming_factory_and_shape(factory, name):
    with pytest.raises(ValueError, match=rf"init\.{name}: shape \[\] has rank 0"):
        factory(1)(())


def test_kaiming_gives_a_convolution_kernel_its_fan_in_from_the_trailing_axes():
    # [outputs, inputs, height, width], as PyTorch: fan_in = 3 * 3 * 3 = 27.
    tensor = init.kaiming(1)(Shape([16, 3, 3, 3]))
    assert tensor.shape == (16, 3, 3, 3)
    assert bits_of(tensor) == scalar_normals(1, math.sqrt(2.0 / 27), 16 * 27)


def test_xavier_gives_a_convolution_kernel_both_fans_times_the_window():
    # fan_in = 4 * 5 = 20, fan_out = 6 * 5 = 30 for a [6, 4, 5] one-dimensional kernel.
    tensor = init.xavier(2)(Shape([6, 4, 5]))
    assert bits_of(tensor) == scalar_uniforms(2, math.sqrt(6.0 / 50), 120)


def test_kernel_draws_have_pytorchs_deviation_and_bound():
    # The deviation a kernel gets, measured: 18432 draws put the sample deviation within
    # 3% of sqrt(2 / fan_in) (its own spread is some 0.5%); reading the kernel as
    # [inputs, outputs] would give sqrt(2 / 64), 2.1 times as much.
    kernel = init.kaiming(7)(Shape([64, 32, 3, 3])).numpy()
    assert abs(float(kernel.std()) / math.sqrt(2.0 / 288) - 1.0) < 0.03
    assert abs(float(kernel.mean())) < 0.1 * math.sqrt(2.0 / 288)
    bound = math.sqrt(6.0 / (288 + 576))
    uniform = init.xavier(7)(Shape([64, 32, 3, 3])).numpy()
    assert float(np.abs(uniform).max()) <= bound
    assert float(np.abs(uniform).max()) > 0.99 * bound
    assert abs(float(uniform.std()) / (bound / math.sqrt(3.0)) - 1.0) < 0.03


@pytest.mark.parametrize("factory", [init.kaiming, init.xavier])
def test_kernels_and_biases_continue_one_stream(factory):
    weights = factory(5)
    first, bias, second = weights([8, 3, 3, 3]), weights([8]), weights([4, 8, 3, 3])
    assert not np.any(bias.numpy())  # a bias draws nothing
    again = factory(5)
    assert bits_of(first) == bits_of(again([8, 3, 3, 3]))
    assert bits_of(second) == bits_of(again([4, 8, 3, 3]))
    assert bits_of(first) != bits_of(second)[: 8 * 27]


def test_kernel_fans_are_pytorchs():
    torch = pytest.importorskip("torch")
    from topos.nn.init import _fans

    for extents in ([16, 3, 3, 3], [6, 4, 5], [2, 3, 4, 5, 6]):
        expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(extents))
        assert _fans("kaiming", tuple(extents)) == expected


def test_draws_near_a_float32_rounding_boundary_are_recomputed_through_libm():
    # The exact midpoint between two float32 neighbours: a last-bits libm difference
    # could send it either way, so the recompute callback must decide it.
    below = np.float32(1.5)
    midpoint = (float(below) + float(np.nextafter(below, np.float32(2)))) / 2
    values = np.array([0.75, midpoint, -3.0])
    recomputed = []

    def recompute(index):
        recomputed.append(index)
        return 42.0

    rounded = init._float32_as_libm(values, recompute)
    assert recomputed == [1]
    assert rounded.tolist() == [0.75, 42.0, -3.0]


def test_a_kaiming_kernel_is_a_convolution_weight_a_user_model_records():
    # As a user writes a convolution (tests/support/user_models.py draws its own kernels
    # with init.normal and the deviation by hand): init.kaiming does the fan now.
    from topos import Tape, Tensor, conv2d

    tape = Tape()
    images = tape.input(Tensor.filled([2, 3, 8, 8], 0.5))
    kernel = tape.parameter(init.kaiming(1)(Shape([8, 3, 3, 3])), "conv.weight")
    assert conv2d(images, kernel, padding=1).shape == (2, 8, 8, 8)
