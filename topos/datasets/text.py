"""Text: a character corpus for a language model — a UTF-8 file of the user's, or the
synthetic text — numbered by its sorted distinct characters and split 90/10.

`load_text(path)` reads `path` (a UTF-8 text file, or a folder holding `input.txt`),
or makes the synthetic text (cached like the synthetic image sets) when it is None. A
file that is not UTF-8, is empty, or is too short for one batch's windows is refused
with a one-line DataError naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from topos.datasets.dataset import Dataset
from topos.datasets.errors import DataError
from topos.datasets.regular_file import read_capped
from topos.datasets.synthetic_cache import cached_text
from topos.datasets.synthetic_text import LENGTH, synthetic_bytes
from topos.datasets.text_split import TextSplit

NAME = "text"
#: The file a text folder holds (as in the char-rnn and nanoGPT corpora).
FILE_NAME = "input.txt"
#: The first 9/10 of the characters train; the rest validate.
TRAIN_FRACTION = (9, 10)
#: The largest text file read (bytes): far beyond a character model's corpus.
MAXIMUM_BYTES = 1 << 30
#: The stream of the synthetic text.
SYNTHETIC_SEED = 14


def id_dtype(vocabulary: str) -> np.dtype:
    """The narrowest unsigned integer that numbers every character of `vocabulary`:
    uint16 up to 65,536 distinct characters, uint32 beyond (Unicode has 1,114,112 code
    points, so a text can never need more). A fixed uint16 made a text of more distinct
    characters an internal error."""
    return np.dtype(np.uint16 if len(vocabulary) <= 1 << 16 else np.uint32)


class TextDataset(Dataset):
    """A character corpus: `train` and `test` (the validation split) are TextSplits over
    one `vocabulary`, the sorted distinct characters of the whole text."""

    def __init__(self, source: str, format: str, text: str) -> None:
        vocabulary = "".join(sorted(set(text)))
        lookup = {character: index for index, character in enumerate(vocabulary)}
        ids = np.fromiter(
            (lookup[character] for character in text), id_dtype(vocabulary), len(text)
        )
        cut = len(text) * TRAIN_FRACTION[0] // TRAIN_FRACTION[1]
        train, validation = TextSplit(ids[:cut], vocabulary), TextSplit(ids[cut:], vocabulary)
        super().__init__(NAME, source, format, lambda: train, lambda: validation)
        self.vocabulary = vocabulary

    def describe(self) -> dict:
        """What the corpus holds, JSON-ready: name, source, format, fingerprint, the
        vocabulary, and per split its characters and fingerprint."""
        return {
            "name": self.name,
            "source": self.source,
            "format": self.format,
            "fingerprint": self.fingerprint,
            "vocabulary": self.vocabulary,
            "splits": {
                name: {"characters": len(split), "fingerprint": split.fingerprint}
                for name, split in (("train", self.train), ("validation", self.test))
            },
        }


def locate(path: str | os.PathLike[str]) -> Path:
    """The text file `path` names: the file itself, or `input.txt` in a folder."""
    if not os.fspath(path).strip():
        raise DataError(repr(os.fspath(path)), "an empty path names no text file")
    found = Path(path)
    if found.is_dir():
        found = found / FILE_NAME
    if not found.exists():
        raise DataError(found, "missing")
    return found


def read_text(path: Path) -> str:
    """The characters of a UTF-8 text file; a one-line DataError if it is not one."""
    content = read_capped(path, MAXIMUM_BYTES, "text file")
    if not content:
        raise DataError(path, "empty: a text to train on needs characters")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(
            path, f"not UTF-8 text: byte {error.start} (0x{content[error.start]:02x}) is not UTF-8"
        ) from None


def load_text(
    path: str | os.PathLike[str] | None = None, minimum: int = 0, window: int = 2
) -> TextDataset:
    """The corpus in `path` (a UTF-8 file, or a folder holding `input.txt`), or the
    synthetic text when None. `minimum` is the fewest characters the training split must
    hold (a batch's windows), `window` the fewest the validation split must (one window);
    a shorter text is refused, naming the file."""
    if path is None:
        raw = cached_text(
            f"{NAME}-{SYNTHETIC_SEED:016x}-{LENGTH}",
            LENGTH,
            lambda: synthetic_bytes(SYNTHETIC_SEED),
        )
        return TextDataset("synthetic", "synthetic", raw.tobytes().decode("ascii"))
    found = locate(path)
    text = read_text(found)
    dataset = TextDataset(str(found.resolve()), "utf-8 text", text)
    train, validation = len(dataset.train), len(dataset.test)
    if train < minimum or validation < window:
        raise DataError(
            found,
            f"too short: {len(text)} characters; the first 90% must hold one batch's windows "
            f"({minimum} characters) and the last 10% one window ({window}), but they hold "
            f"{train} and {validation}",
        )
    return dataset
