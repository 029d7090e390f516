"""A text of more distinct characters than uint16 numbers: ids of uint32, and a warning
(one line) when the vocabulary makes the gpt model's memory explode."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.cli.grading import topos
from topos.datasets.text import TextDataset, id_dtype
from topos.workloads.gpt import vocabulary_bytes, vocabulary_warning

#: 70,000 distinct characters, all outside the Basic Multilingual Plane (valid UTF-8).
WIDE = "".join(chr(0x10000 + index) for index in range(70_000))


def test_the_id_width_follows_the_vocabulary():
    assert id_dtype("ab") == np.uint16
    assert id_dtype(WIDE[: 1 << 16]) == np.uint16
    assert id_dtype(WIDE) == np.uint32


def test_a_text_beyond_uint16_keeps_every_character():
    dataset = TextDataset("test", "utf-8 text", WIDE * 2)
    assert len(dataset.vocabulary) == 70_000
    assert dataset.train.ids.dtype == np.uint32
    assert int(dataset.train.ids.max()) == 69_999


def test_a_vocabulary_that_makes_memory_explode_is_warned_of_in_one_line():
    assert vocabulary_warning(65) is None and vocabulary_warning(500) is None
    warning = vocabulary_warning(60_000)
    assert warning is not None and "\n" not in warning and "60,000" in warning
    assert vocabulary_bytes(60_000) > 1 << 30


def test_data_info_of_a_wide_text_works_and_warns(tmp_path: Path):
    path = tmp_path / "input.txt"
    path.write_text(WIDE * 2, encoding="utf-8")
    completed = topos("data", "info", str(path), "--dataset", "text", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "vocabulary: 70000 characters" in completed.stdout
    assert (
        sum("warning: a vocabulary of 70,000" in line for line in completed.stdout.splitlines())
        == 1
    )
    assert "Traceback" not in completed.stderr
