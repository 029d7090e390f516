"""One word, one concept (issue 44): the command's code does not give a second meaning to
a word DESIGN.md gives the library.

*Run* is the library's `Run`, *plan* the engine's `Plan`, *record* the tape's: a list of
worker processes is `repeats`, a prepared grade `preparation`, what the workers gathered
`gathered`. The source is read, never imported or written.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

COMMAND = Path(__file__).resolve().parents[2] / "topos_cli"

#: (parameter name, pattern its annotation must not match, the name it takes instead)
SECOND_MEANINGS = [
    ("runs", r"\bRepeat\b", "repeats"),
    ("plan", r"\bPreparedGrade\b", "preparation"),
    ("record", r"\bGatheredRepeats\b", "gathered"),
]


def parameters_named(name: str, annotation: str) -> list[str]:
    """Where a function of the command takes a parameter `name` annotated to match
    `annotation`, as `file:line function`."""
    found = []
    for path in sorted(COMMAND.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if argument.arg != name or argument.annotation is None:
                    continue
                if re.search(annotation, ast.unparse(argument.annotation)):
                    where = path.relative_to(COMMAND.parent)
                    found.append(f"{where}:{argument.lineno} {node.name}")
    return found


@pytest.mark.parametrize(("name", "annotation", "instead"), SECOND_MEANINGS)
def test_no_parameter_gives_a_library_word_a_second_meaning(
    name: str, annotation: str, instead: str
) -> None:
    found = parameters_named(name, annotation)
    assert not found, f"call it {instead!r}, not {name!r}: " + ", ".join(found)


def test_the_search_finds_a_parameter_it_looks_for() -> None:
    # The guard above passes on an empty search too: check that the search sees one.
    assert parameters_named("repeats", r"\bRepeat\b")
