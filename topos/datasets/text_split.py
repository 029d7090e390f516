"""TextSplit: one part of a character corpus (training or validation), as token ids."""

from __future__ import annotations

import hashlib
from functools import cached_property

import numpy as np


class TextSplit:
    """The characters of one split as ids into the corpus's vocabulary (its sorted
    distinct characters), read-only; windows of them make a language model's batches."""

    #: What a sample of this split is called in messages ("too few characters").
    unit = "characters"

    def __init__(self, ids: np.ndarray, vocabulary: str) -> None:
        ids = np.ascontiguousarray(ids)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"TextSplit: ids must be a rank-1 integer array, not {ids.dtype}")
        if ids.size and (ids.min() < 0 or ids.max() >= len(vocabulary)):
            raise ValueError(f"TextSplit: an id lies outside 0..{len(vocabulary) - 1}")
        ids.flags.writeable = False
        self.ids = ids
        self.vocabulary = vocabulary

    def __len__(self) -> int:
        return self.ids.shape[0]

    @property
    def classes(self) -> int:
        """The size of the vocabulary."""
        return len(self.vocabulary)

    def windows(self, offsets: np.ndarray, length: int) -> np.ndarray:
        """The ids `[len(offsets), length]` of the windows starting at `offsets`."""
        offsets = np.asarray(offsets, dtype=np.intp)
        if offsets.size and (offsets.min() < 0 or offsets.max() + length > len(self)):
            raise ValueError(f"TextSplit: a window of {length} runs past the split's end")
        return self.ids[offsets[:, None] + np.arange(length, dtype=np.intp)]

    def text(self) -> str:
        """The split's characters as a string."""
        return "".join(np.array(list(self.vocabulary))[self.ids].tolist())

    def class_counts(self) -> list[int]:
        """How often each character of the vocabulary occurs, in vocabulary order."""
        return np.bincount(self.ids, minlength=self.classes).tolist()

    @cached_property
    def fingerprint(self) -> str:
        """sha256 hex over the vocabulary (UTF-8), a zero byte, and the ids as little-endian
        uint32: the split's text and how it is numbered."""
        digest = hashlib.sha256()
        digest.update(self.vocabulary.encode("utf-8"))
        digest.update(b"\0")
        digest.update(self.ids.astype("<u4").data)
        return digest.hexdigest()
