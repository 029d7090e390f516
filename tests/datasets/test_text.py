"""The text corpus: a UTF-8 file or a folder's input.txt, its vocabulary and 90/10 split,
the synthetic text (pinned, cached), and the one-line errors a bad file gets."""

from __future__ import annotations

import os

import numpy as np
import pytest

from topos.datasets import DataError
from topos.datasets.synthetic_text import LENGTH, synthetic_text
from topos.datasets.text import load_text

#: sha256 of the synthetic text's training split (vocabulary, then ids): pinned, so
#: the text never changes unnoticed (change GENERATOR_VERSION with it).
SYNTHETIC_TRAIN_FINGERPRINT = "36da5594b7fde2817376a2b90676346780e200882e22d6745bac9a10d2563d22"


def test_a_file_is_numbered_by_its_sorted_characters_and_split_90_10(tmp_path):
    text = "hello, wörld\n" * 20
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    dataset = load_text(path)
    assert dataset.vocabulary == "".join(sorted(set(text)))
    assert len(dataset.train) == len(text) * 9 // 10
    assert len(dataset.train) + len(dataset.test) == len(text)
    assert dataset.train.text() + dataset.test.text() == text
    assert dataset.source == str(path.resolve()) and dataset.format == "utf-8 text"


def test_a_folder_is_read_through_its_input_txt(tmp_path):
    (tmp_path / "input.txt").write_text("abcabcabd" * 10, encoding="utf-8")
    assert load_text(tmp_path).vocabulary == "abcd"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty"),
        (b"caf\xe9 au lait" * 10, "not UTF-8 text: byte 3 (0xe9)"),
        (b"ab" * 100, "too short: 200 characters"),
    ],
    ids=["empty", "not utf-8", "too short"],
)
def test_a_bad_file_is_one_line_naming_it(tmp_path, content, words):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    with pytest.raises(DataError) as caught:
        load_text(path, minimum=32 * 65, window=65)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and words in message
    assert "\n" not in message


def test_a_missing_file_a_folder_without_input_txt_and_an_empty_path_are_refused(tmp_path):
    with pytest.raises(DataError, match="missing"):
        load_text(tmp_path / "nothing.txt")
    with pytest.raises(DataError, match=r"input\.txt: missing"):
        load_text(tmp_path)
    with pytest.raises(DataError, match="empty path"):
        load_text("")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "input.txt"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="FIFO"):
        load_text(fifo)


def test_the_synthetic_text_is_pinned_structured_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOS_CACHE_DIR", str(tmp_path))
    dataset = load_text(None)
    assert dataset.source == "synthetic"
    assert len(dataset.train) + len(dataset.test) == LENGTH
    assert dataset.train.fingerprint == SYNTHETIC_TRAIN_FINGERPRINT
    assert any(path.suffix == ".npz" for path in tmp_path.iterdir())
    again = load_text(None)  # from the cache
    assert again.fingerprint == dataset.fingerprint
    text = synthetic_text(14, 5000)
    assert text == dataset.train.text()[:5000]
    # Words, sentences and paragraphs: spaces, capitals after a full stop, newlines.
    assert text.count(" ") > 500 and text.count("\n") > 5 and ". " in text
    counts = np.bincount(dataset.train.ids)
    assert counts.min() > 0
