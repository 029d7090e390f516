"""A restricted unpickler for CIFAR-10's Python batches: data, never code.

A pickle names the callables that rebuild its objects, and an ordinary
unpickler imports and calls whatever it names, so an untrusted pickle can run
anything. CIFAR-10's batches hold only dicts, lists, bytes, strings, numbers
and NumPy arrays; this unpickler admits just the few callables that rebuild
those and refuses every other with a DataError.
"""

from __future__ import annotations

import codecs
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from topos.datasets.errors import DataError

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


# (module, name) -> what it may resolve to. NumPy arrays pickle through
# `_reconstruct` (protocols up to 4) or `_frombuffer` (protocol 5), under
# `numpy.core` before NumPy 2 and `numpy._core` since.
ADMITTED = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1_encode,
}


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the callables in ADMITTED."""

    def find_class(self, module: str, name: str) -> Any:
        """Resolves an admitted global; refuses any other."""
        try:
            return ADMITTED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refused {module}.{name}: only dicts, lists, bytes, strings, numbers "
                "and NumPy arrays are admitted"
            ) from None


def load_restricted(path: Path) -> Any:
    """Unpickles `path` with RestrictedUnpickler; any failure is a one-line DataError.

    Strings written by Python 2 (as CIFAR-10's batches were) load as bytes.
    """
    try:
        with open(path, "rb") as file:
            return RestrictedUnpickler(file, encoding="bytes").load()
    except FileNotFoundError:
        raise DataError(path, "missing") from None
    except (EOFError, pickle.UnpicklingError) as error:
        if isinstance(error, EOFError) or "truncated" in str(error):
            size = path.stat().st_size
            raise DataError(
                path, f"truncated: the pickle ends after {size} bytes, before its end mark"
            ) from None
        raise DataError(path, f"not a readable pickle: {error}") from None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError) as error:
        # A damaged stream can feed the admitted callables nonsense.
        raise DataError(path, f"corrupt pickle: {type(error).__name__}: {error}") from None
