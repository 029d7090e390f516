"""The restricted unpickler admits CIFAR-10's data types and refuses anything else."""

import codecs
import os
import pickle

import numpy as np
import pytest

from tests.datasets.writers import python2_pickle
from topos.datasets import DataError
from topos.datasets.restricted_unpickler import load_restricted

VALUE = {
    b"data": np.arange(12, dtype=np.uint8).reshape(3, 4),
    "labels": [1, 2, 3],
    "nested": (1.5, b"bytes", "text", None, True, [np.float32(2.5)][:0]),
}


@pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
def test_admits_dicts_lists_bytes_strings_numbers_and_arrays(tmp_path, protocol):
    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps(VALUE, protocol))
    loaded = load_restricted(path)
    assert np.array_equal(loaded[b"data"], VALUE[b"data"])
    assert loaded[b"data"].dtype == np.uint8
    assert loaded["labels"] == [1, 2, 3]
    assert loaded["nested"] == VALUE["nested"]


def test_admits_python2_pickles_with_their_strings_as_bytes(tmp_path):
    path = tmp_path / "batch"
    path.write_bytes(python2_pickle({"data": np.ones((2, 3), dtype=np.uint8), "name": "x"}))
    loaded = load_restricted(path)
    assert loaded[b"name"] == b"x"
    assert np.array_equal(loaded[b"data"], np.ones((2, 3), dtype=np.uint8))


class Reducing:
    """Pickles as a call of `function(*arguments)`."""

    def __init__(self, function, *arguments):
        self.function, self.arguments = function, arguments

    def __reduce__(self):
        return self.function, self.arguments


@pytest.mark.parametrize(
    ("payload", "refused"),
    [
        (Reducing(os.system, "true"), "posix.system"),
        (Reducing(eval, "1 + 1"), "builtins.eval"),
        (Reducing(getattr, np.ndarray, "tofile"), "builtins.getattr"),
        (Reducing(set, [1]), "builtins.set"),
    ],
)
def test_refuses_every_other_global(tmp_path, payload, refused):
    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps({"data": payload}, protocol=4))
    with pytest.raises(DataError, match=rf"batch: not a readable pickle: refused {refused}:"):
        load_restricted(path)


def test_codecs_encode_is_admitted_only_for_latin1(tmp_path):
    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps(Reducing(codecs.encode, "abc", "rot13"), protocol=2))
    with pytest.raises(DataError, match="encoding 'rot13' is refused"):
        load_restricted(path)


def test_missing_and_truncated_files(tmp_path):
    with pytest.raises(DataError, match=r"absent: missing$"):
        load_restricted(tmp_path / "absent")
    path = tmp_path / "short"
    path.write_bytes(pickle.dumps(VALUE, 4)[:30])
    with pytest.raises(DataError, match="short: truncated: the pickle ends after 30 bytes"):
        load_restricted(path)


def dict_keyed_by_nested_tuples(depth: int) -> bytes:
    """A pickle of `{key: 1}` whose key is ten references to one tuple, `depth` deep:
    some hundreds of bytes, whose key takes 10 ** depth steps to hash. Written by hand,
    since pickling it here would hash it."""
    stream = bytearray(pickle.PROTO + b"\x02" + pickle.EMPTY_DICT)
    stream += pickle.MARK + pickle.BININT1 + b"\x00" + pickle.TUPLE + pickle.BINPUT + b"\x00"
    for level in range(1, depth + 1):
        # Each level is kept in the memo and taken off the stack but the last, the key.
        stream += pickle.POP + pickle.MARK + (pickle.BINGET + bytes([level - 1])) * 10
        stream += pickle.TUPLE + pickle.BINPUT + bytes([level])
    return bytes(stream + pickle.BININT1 + b"\x01" + pickle.SETITEM + pickle.STOP)


class KeyedBy:
    """A pickle written as it is."""

    def __init__(self, stream):
        self.stream = stream


try:
    from numpy._core.multiarray import _reconstruct
except ImportError:  # NumPy < 2
    from numpy.core.multiarray import _reconstruct


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        # Building the dict would hash 10 ** 30 tuples.
        (
            KeyedBy(dict_keyed_by_nested_tuples(30)),
            "a dict key or a set item may only be a string or a number",
        ),
        # An array of a terabyte, conjured by a call rather than read from the file.
        (Reducing(np.ndarray, (10**12,)), "numpy.ndarray may not be called"),
        (Reducing(_reconstruct, np.ndarray, (10**12,), b"b"), "an array is rebuilt only empty"),
        (np.zeros(2, dtype=[("a", "u1"), ("b", "u1")]), "only a plain dtype is admitted"),
        ([0] * 2000, "more than 1000 pickle operations, the most its format needs"),
    ],
)
def test_refuses_what_would_take_without_bound_before_it_takes_it(tmp_path, payload, problem):
    path = tmp_path / "batch"
    stream = payload.stream if isinstance(payload, KeyedBy) else None
    path.write_bytes(stream or pickle.dumps({"data": payload}, protocol=4))
    with pytest.raises(DataError, match=rf"batch: not a readable pickle: {problem}"):
        load_restricted(path, operation_limit=1000)


def test_refuses_a_fifo_and_a_file_past_its_size_limit(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="fifo: is a FIFO, expected a regular file"):
        load_restricted(fifo)
    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps(VALUE, 4))
    with pytest.raises(DataError, match=r"batch: too large: .* a pickle holds at most 100$"):
        load_restricted(path, size_limit=100)
