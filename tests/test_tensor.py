"""Tensor and Shape: immutable payloads, their constructors and their arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from topos import Shape, ShapeError, Tensor


def test_shape_extents_rank_and_volume():
    shape = Shape([2, 3, 4])
    assert (shape.rank, shape.volume, shape.extents) == (3, 24, (2, 3, 4))
    assert list(shape) == [2, 3, 4] and len(shape) == 3 and shape[-1] == 4
    scalar = Shape(())
    assert (scalar.rank, scalar.volume) == (0, 1)
    assert Shape([2, 0]).volume == 0
    assert str(shape) == "[2, 3, 4]" and str(scalar) == "[]"


def test_shape_equality_and_hashing():
    assert Shape([2, 3]) == Shape((2, 3))
    assert Shape([2, 3]) == (2, 3)
    assert Shape([2, 3]) == [2, 3]
    assert Shape([2, 3]) != Shape([3, 2]) and Shape([2, 3]) != (2, 3, 1)
    assert len({Shape([2, 3]), Shape((2, 3)), Shape([3, 2])}) == 2
    assert Shape.of(5) == (5,) and Shape.of(Shape([1])) == (1,)


def test_shape_refuses_a_negative_extent():
    with pytest.raises(ShapeError, match="negative"):
        Shape([2, -1])


def test_constructor_copies_its_data():
    source = np.arange(6, dtype=np.float32)
    tensor = Tensor([2, 3], source)
    source[0] = 100
    assert tensor.numpy()[0, 0] == 0
    listed = [1.0, 2.0]
    from_list = Tensor([2], listed)
    listed[0] = 5.0
    assert from_list.numpy().tolist() == [1.0, 2.0]


def every_kind_of_tensor():
    base = Tensor([2, 3], np.arange(6))
    return {
        "constructor": base,
        "constructor_reshaped": Tensor([6], np.arange(6.0).reshape(2, 3), np.float32),
        "filled": Tensor.filled([2], 1.0),
        "selection": Tensor.selection([1, 0], 3),
        "broadcast_like": Tensor.filled([], 2.0).broadcast_like(base),
        "sum": base + base,
        "number": base * 2.0,
        "reflected": 1.0 - base,
        "negation": -base,
        "adopted": Tensor.adopt(np.zeros(3, np.float32)),
    }


@pytest.mark.parametrize("kind", sorted(every_kind_of_tensor()))
def test_numpy_is_read_only_for_good(kind: str):
    tensor = every_kind_of_tensor()[kind]
    before = tensor.numpy().copy()
    array = tensor.numpy()
    assert not array.flags.writeable
    with pytest.raises(ValueError):
        array[...] = 7
    if kind != "adopted":  # adopt wraps the caller's array, whose flags are the caller's
        with pytest.raises(ValueError):
            array.flags.writeable = True
    assert tensor.numpy().tobytes() == before.tobytes()


def test_adopt_wraps_without_copying():
    array = np.zeros(3, np.float32)
    tensor = Tensor.adopt(array)
    assert np.shares_memory(tensor.numpy(), array)
    with pytest.raises(TypeError, match="int64"):
        Tensor.adopt(np.zeros(3, np.int64))


def test_dtypes():
    assert Tensor([2], [1, 2]).dtype == np.float32
    assert Tensor([2], np.array([1, 2])).dtype == np.float32
    assert Tensor([2], [1, 2], dtype=np.float64).dtype == np.float64
    assert Tensor.filled([2], 0.0, np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="float16"):
        Tensor([2], [1, 2], dtype=np.float16)


def test_constructor_refuses_data_that_does_not_fill_the_shape():
    with pytest.raises(ShapeError, match=r"5 values.*\[2, 3\]"):
        Tensor([2, 3], [1, 2, 3, 4, 5])


def test_selection_gives_one_hot_rows():
    rows = Tensor.selection([2, 0, 2], 4, value=0.5)
    assert rows.shape == (3, 4) and rows.dtype == np.float32
    expected = np.zeros((3, 4), np.float32)
    expected[[0, 1, 2], [2, 0, 2]] = 0.5
    assert rows.numpy().tobytes() == expected.tobytes()
    assert Tensor.selection(np.array([1]), 2).numpy().tolist() == [[0.0, 1.0]]
    with pytest.raises(ValueError, match=r"0\.\.3"):
        Tensor.selection([4], 4)
    with pytest.raises(ValueError):
        Tensor.selection([-1], 4)


def test_scalar():
    value = Tensor([], [2.5]).scalar()
    assert value == 2.5 and isinstance(value, np.float32)
    assert Tensor([1, 1], [3.0]).scalar() == 3.0
    assert isinstance(Tensor([], [1.0], np.float64).scalar(), np.float64)
    with pytest.raises(ShapeError, match=r"\[2\]"):
        Tensor([2], [1, 2]).scalar()


def test_broadcast_like():
    target = Tensor([2, 3], np.arange(6))
    spread = Tensor([], [0.25]).broadcast_like(target)
    assert spread.shape == (2, 3) and spread.dtype == np.float32
    assert spread.numpy().tolist() == [[0.25] * 3] * 2
    same = Tensor([2, 3], np.ones(6)).broadcast_like(target)
    assert same == Tensor([2, 3], np.ones(6))
    with pytest.raises(ShapeError, match=r"\[3\].*\[2, 3\]"):
        Tensor([3], [1, 2, 3]).broadcast_like(target)


ARITHMETIC = [
    ("add", lambda t: t + 0.1, lambda a: a + np.float32(0.1)),
    ("radd", lambda t: 0.1 + t, lambda a: np.float32(0.1) + a),
    ("sub", lambda t: t - 0.1, lambda a: a - np.float32(0.1)),
    ("rsub", lambda t: 1 - t, lambda a: np.float32(1) - a),
    ("mul", lambda t: t * 0.05, lambda a: a * np.float32(0.05)),
    ("rmul", lambda t: 0.05 * t, lambda a: np.float32(0.05) * a),
    ("div", lambda t: t / 3, lambda a: a / np.float32(3)),
    ("rdiv", lambda t: 3.0 / t, lambda a: np.float32(3) / a),
    ("numpy_scalar", lambda t: t * np.float64(0.05), lambda a: a * np.float32(0.05)),
    ("neg", lambda t: -t, lambda a: -a),
]


@pytest.mark.parametrize(
    ("make", "reference"), [a[1:] for a in ARITHMETIC], ids=[a[0] for a in ARITHMETIC]
)
def test_arithmetic_with_numbers_stays_float32(make, reference):
    array = np.random.default_rng(0).uniform(0.5, 2.0, (4, 5)).astype(np.float32)
    tensor = Tensor([4, 5], array)
    result = make(tensor)
    assert result.dtype == np.float32 and result.shape == (4, 5)
    assert result.numpy().tobytes() == reference(array).tobytes()
    assert tensor.numpy().tobytes() == array.tobytes()  # the operand is untouched


def test_float32_arithmetic_is_not_float64_rounded_once():
    # The reference above is discriminating: computing in float64 and rounding once
    # would give other bits for some of these elements.
    array = np.random.default_rng(0).uniform(0.5, 2.0, 1000).astype(np.float32)
    float32 = (Tensor([1000], array) * 0.05).numpy()
    float64 = (array.astype(np.float64) * 0.05).astype(np.float32)
    assert float32.tobytes() != float64.tobytes()


def test_arithmetic_between_tensors():
    a = Tensor([2, 2], [1, 2, 3, 4])
    b = Tensor([2, 2], [4, 3, 2, 1])
    assert (a + b).numpy().tolist() == [[5, 5], [5, 5]]
    assert (a * Tensor([], [2])).numpy().tolist() == [[2, 4], [6, 8]]
    assert (Tensor([], [10]) - a).numpy().tolist() == [[9, 8], [7, 6]]
    with pytest.raises(ShapeError, match=r"\[2, 2\].*\[4\]"):
        _ = a + Tensor([4], [1, 2, 3, 4])
    with pytest.raises(TypeError, match="float64"):
        _ = a + Tensor([2, 2], [1, 2, 3, 4], np.float64)
    with pytest.raises(TypeError):
        _ = a + "one"


def test_equality_is_exact_over_shape_dtype_and_bits():
    assert Tensor([2], [1, 2]) == Tensor([2], [1, 2])
    assert Tensor([2], [1, 2]) != Tensor([1, 2], [1, 2])
    assert Tensor([2], [1, 2]) != Tensor([2], [1, 2], np.float64)
    assert Tensor([], [0.0]) != Tensor([], [-0.0])
    assert Tensor([], [np.nan]) == Tensor([], [np.nan])
    with pytest.raises(TypeError):
        hash(Tensor([], [1.0]))


def test_selection_refuses_fractional_labels():
    with pytest.raises(TypeError, match="labels must be integers"):
        Tensor.selection([1.5], 3)


def test_numpy_scalars_mix_into_recording_like_python_numbers():
    from topos import Tape

    tape = Tape()
    value = tape.input(Tensor.filled([2], 1.0))
    for number in (np.float32(2), np.float64(2), np.int64(2), 2, 2.0):
        assert (value + number).shape == (2,)
        assert (number * value).shape == (2,)


def test_a_tape_takes_its_dtype_from_the_first_tensor_and_refuses_a_mix():
    from topos import Tape

    tape = Tape()
    value = tape.parameter(Tensor([2], np.array([1.0, 2.0])))  # float64 data stays float64
    assert tape.dtype == np.float64 and (value * 2.0).shape == (2,)
    with pytest.raises(TypeError, match="float32 but the tape records float64"):
        tape.input(Tensor.filled([2], 0.0))
    assert Tape().dtype == np.float32
    with pytest.raises(TypeError, match="float64 but the tape records float32"):
        Tape(np.float32).parameter(Tensor([1], np.array([1.0])))
