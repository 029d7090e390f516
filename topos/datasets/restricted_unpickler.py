"""A restricted unpickler for CIFAR-10's Python batches: data, never code.

A pickle names the callables that rebuild its objects, and an ordinary
unpickler imports and calls whatever it names, so an untrusted pickle can run
anything. CIFAR-10's batches hold only dicts, lists, bytes, strings, numbers
and NumPy arrays; this unpickler admits just the few callables that rebuild
those and refuses every other with a DataError.

Restricting callables is not enough: a small pickle can still describe a vast
amount of work. It is read whole only up to a byte limit (never from a FIFO
or a device), every pickle operation counts against a limit, and an array is
rebuilt only as NumPy pickles one (empty, then filled from bytes the pickle
holds), so a file can never claim more memory than a few times its own size.
Whoever reads the result must still check its structure before expanding it:
shared references make a small graph of lists look like an enormous tree.
"""

from __future__ import annotations

import codecs
import io
import pickle
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from topos.datasets.errors import DataError
from topos.datasets.regular_file import read_capped

try:
    from numpy._core.multiarray import _reconstruct
    from numpy._core.numeric import _frombuffer
except ImportError:  # NumPy < 2 keeps them under numpy.core
    from numpy.core.multiarray import _reconstruct
    from numpy.core.numeric import _frombuffer


def _latin1_encode(text: str, encoding: str = "utf-8") -> bytes:
    """`_codecs.encode` as pickles written at protocol 2 by Python 3 use it for
    bytes, limited to that use: latin-1 text to bytes."""
    if not isinstance(text, str) or codecs.lookup(encoding).name != "iso8859-1":
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is refused")
    return text.encode("latin-1")


def _reconstruct_empty(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    """`_reconstruct` as NumPy's pickles call it: an empty array, which the pickle then
    fills from its own bytes. Any other shape would allocate what the file never held."""
    if subtype is not np.ndarray or tuple(shape) != (0,):
        raise pickle.UnpicklingError("an array is rebuilt only empty, as NumPy pickles it")
    return _reconstruct(np.ndarray, (0,), dtype)


class _ArrayType:
    """Stands for `numpy.ndarray` in a pickle: `_reconstruct`'s first argument, never
    a callable (calling `ndarray(shape)` would allocate any size the pickle names)."""

    def __call__(self, *arguments: Any) -> Any:
        raise pickle.UnpicklingError("numpy.ndarray may not be called")


ARRAY_TYPE = _ArrayType()


def _reconstruct_admitted(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    """`_reconstruct` for the stand-in of `numpy.ndarray`."""
    return _reconstruct_empty(np.ndarray if subtype is ARRAY_TYPE else subtype, shape, dtype)


def _plain_dtype(specification: Any, align: Any = False, copy: Any = False) -> np.dtype:
    """`numpy.dtype` as NumPy's pickles call it: from a type code such as "u1" (bytes in
    a pickle Python 2 wrote)."""
    if type(specification) is bytes:
        specification = specification.decode("latin-1")
    if type(specification) is not str or len(specification) > 16:
        raise pickle.UnpicklingError("a dtype is admitted only from a short type code")
    return np.dtype(specification, bool(align), bool(copy))


# (module, name) -> what it may resolve to. NumPy arrays pickle through
# `_reconstruct` (protocols up to 4) or `_frombuffer` (protocol 5), under
# `numpy.core` before NumPy 2 and `numpy._core` since.
ADMITTED = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct_admitted,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct_admitted,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy", "ndarray"): ARRAY_TYPE,
    ("numpy", "dtype"): _plain_dtype,
    ("_codecs", "encode"): _latin1_encode,
}


class _Operations(dict):
    """The pure-Python unpickler's table of operations, each counted as it runs; an
    unknown opcode is an UnpicklingError (a plain KeyError would say nothing)."""

    def __missing__(self, code: int) -> Callable[[Any], None]:
        raise pickle.UnpicklingError(f"invalid opcode 0x{code:02x}")


# What may be a dict key or a set item: hashing or comparing one costs a few steps.
# A tuple may not: one of shared tuples, ten deep, hashes for longer than a lifetime.
ATOMS = (str, bytes, int, float, bool, type(None))


def _require_atoms(items: Any) -> None:
    if not all(type(item) in ATOMS for item in items):
        raise pickle.UnpicklingError("a dict key or a set item may only be a string or a number")


def _check_keys(unpickler: RestrictedUnpickler, code: int) -> None:
    """Before an operation that hashes its operands: refuses keys that are not atoms."""
    stack = unpickler.stack
    if code == pickle.SETITEM[0]:
        _require_atoms(stack[-2:-1])
    elif code in (pickle.SETITEMS[0], pickle.DICT[0]):
        _require_atoms(stack[0::2])  # after MARK the stack holds key, value, key, value...
    else:  # ADDITEMS, FROZENSET: every item is hashed
        _require_atoms(stack)


def _check_build(unpickler: RestrictedUnpickler, code: int) -> None:
    """Before BUILD: a dtype's state may not describe fields or a subarray (NumPy's own
    pickles of plain dtypes never do), since those nest without bound."""
    instance, state = unpickler.stack[-2], unpickler.stack[-1]
    if isinstance(instance, np.dtype) and not (
        type(state) is tuple and len(state) >= 5 and all(part is None for part in state[2:5])
    ):
        raise pickle.UnpicklingError("only a plain dtype is admitted, not a structured one")


# Operations whose operands are checked before they run.
CHECKS = {
    pickle.SETITEM[0]: _check_keys,
    pickle.SETITEMS[0]: _check_keys,
    pickle.DICT[0]: _check_keys,
    pickle.ADDITEMS[0]: _check_keys,
    pickle.FROZENSET[0]: _check_keys,
    pickle.BUILD[0]: _check_build,
}


def _counted(code: int, operation: Callable[[Any], None]) -> Callable[[Any], None]:
    check = CHECKS.get(code)

    def run(unpickler: RestrictedUnpickler) -> None:
        unpickler.count_operation()
        if check is not None:
            check(unpickler, code)
        operation(unpickler)

    return run


class RestrictedUnpickler(pickle._Unpickler):
    """An unpickler that resolves only the callables in ADMITTED and runs at most
    `operation_limit` pickle operations.

    The pure-Python unpickler, because its operations can be counted: every
    object a pickle builds takes at least one, so the limit bounds how many it
    may build whatever they refer to.
    """

    dispatch = _Operations(
        {code: _counted(code, operation) for code, operation in pickle._Unpickler.dispatch.items()}
    )

    def __init__(self, file: Any, *, operation_limit: int, **options: Any) -> None:
        super().__init__(file, **options)
        self.operations_left = operation_limit
        self.operation_limit = operation_limit

    def count_operation(self) -> None:
        """Counts one operation; refuses the pickle past the limit."""
        self.operations_left -= 1
        if self.operations_left < 0:
            raise pickle.UnpicklingError(
                f"more than {self.operation_limit} pickle operations, the most its format needs"
            )

    def find_class(self, module: str, name: str) -> Any:
        """Resolves an admitted global; refuses any other."""
        try:
            return ADMITTED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refused {module}.{name}: only dicts, lists, bytes, strings, numbers "
                "and NumPy arrays are admitted"
            ) from None


def load_restricted(
    path: Path, size_limit: int = 1 << 30, operation_limit: int = 1 << 24, what: str = "pickle"
) -> Any:
    """Unpickles `path` with RestrictedUnpickler; any failure is a one-line DataError.

    The file must be a regular file of at most `size_limit` bytes, and may take at
    most `operation_limit` operations: the most a `what` needs. Strings written by
    Python 2 (as CIFAR-10's batches were) load as bytes.
    """
    content = read_capped(path, size_limit, what)
    try:
        unpickler = RestrictedUnpickler(
            io.BytesIO(content), operation_limit=operation_limit, encoding="bytes"
        )
        return unpickler.load()
    except (EOFError, pickle.UnpicklingError) as error:
        if isinstance(error, EOFError) or "truncated" in str(error) or "exhausted" in str(error):
            raise DataError(
                path,
                f"truncated: the pickle ends after {len(content)} bytes, before its end mark",
            ) from None
        raise DataError(path, f"not a readable pickle: {error}") from None
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        OverflowError,
        struct.error,
    ) as error:
        # A damaged stream can feed the admitted callables nonsense.
        raise DataError(path, f"corrupt pickle: {type(error).__name__}: {error}") from None
