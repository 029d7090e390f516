"""The vocabulary page (docs/reference/vocabulary.md) is the library's own: written from
`topos.vocabulary`, every name it shows exists, and every "not yet" is a name that does not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from topos.graph.value import Value
from topos.vocabulary import VOCABULARY, Word, page, spelled

ROOT = Path(__file__).resolve().parents[1]


def test_the_committed_page_is_a_fresh_one():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "write_vocabulary.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_every_method_a_shown_call_names_exists():
    # A call cell may show several methods (`x.sin(), x.cos()`); each must be a Value's.
    missing = [
        (word.torch, method)
        for words in VOCABULARY.values()
        for word in words
        if spelled(word)
        for method in re.findall(r"\bx\.([a-z_]+)", word.call)
        if not hasattr(Value, method)
    ]
    assert not missing


def test_a_missing_name_is_not_yet_and_an_existing_one_is_shown():
    absent = Word("torch.imaginary", "Value.imaginary_method")
    present = Word("x.amax(dim)", "Value.amax")
    assert not spelled(absent) and spelled(present)
    assert spelled(Word("torch.einsum", "topos.einsum"))
    assert not spelled(Word("nn.Missing", "topos.nn.NoSuchLayer"))
    text = page()
    assert "| `x.amax(dim), x.amin(dim)` | `x.amax(dim), x.amin(dim)` |" in text
