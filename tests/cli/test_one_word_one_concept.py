"""One word, one concept (issue 44): the command's code does not give a second meaning to
a word DESIGN.md gives the library.

*Run* is the library's `Run`, *plan* the engine's `Plan`, *record* the tape's: a list of
worker processes is `repeats` (one is a `repeat`, the report's view of one a
`RepeatSeries`), a prepared grade `preparation`, what the workers gathered `gathered`.
The source is read, never imported or written.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

COMMAND = Path(__file__).resolve().parents[2] / "topos_cli"

#: (parameter name, pattern its annotation must not match, the name it takes instead)
SECOND_MEANINGS = [
    ("runs", r"\bRepeat\b|\bRepeatSeries\b", "repeats"),
    ("run", r"\bRepeat\b|\bRepeatSeries\b", "repeat"),
    ("plan", r"\bPreparedGrade\b", "preparation"),
    ("record", r"\bGatheredRepeats\b", "gathered"),
]


#: Names the command once gave a repeat as a run, and what it is called instead.
OLD_SPELLINGS = {"RunSeries": "RepeatSeries", "runs_of": "repeats_of"}


@functools.cache
def _trees() -> tuple[tuple[Path, ast.Module], ...]:
    """Every module of the command, parsed once for all the searches."""
    return tuple(
        (path, ast.parse(path.read_text(), filename=str(path)))
        for path in sorted(COMMAND.rglob("*.py"))
    )


def _annotated(
    name: str, annotation: str, named: Callable[[ast.AST], Iterator[tuple]]
) -> list[str]:
    """Where `named` (a node's `(owner, name, annotation, line)`s) finds `name` annotated
    to match `annotation`, as `file:line owner`."""
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            for owner, spelled, node_annotation, line in named(node):
                if spelled != name or node_annotation is None:
                    continue
                if re.search(annotation, ast.unparse(node_annotation)):
                    found.append(f"{path.relative_to(COMMAND.parent)}:{line} {owner}")
    return found


def _parameters(node: ast.AST) -> Iterator[tuple]:
    """A function's parameters."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = node.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            yield node.name, argument.arg, argument.annotation, argument.lineno


def _fields(node: ast.AST) -> Iterator[tuple]:
    """A class's annotated fields."""
    if isinstance(node, ast.ClassDef):
        for field in node.body:
            if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name):
                yield node.name, field.target.id, field.annotation, field.lineno


def parameters_named(name: str, annotation: str) -> list[str]:
    """Where a function of the command takes a parameter `name` annotated to match
    `annotation`, as `file:line function`."""
    return _annotated(name, annotation, _parameters)


@pytest.mark.parametrize(("name", "annotation", "instead"), SECOND_MEANINGS)
def test_no_parameter_gives_a_library_word_a_second_meaning(
    name: str, annotation: str, instead: str
) -> None:
    found = parameters_named(name, annotation)
    assert not found, f"call it {instead!r}, not {name!r}: " + ", ".join(found)


def test_the_search_finds_a_parameter_it_looks_for() -> None:
    # The guard above passes on an empty search too: check that the search sees one.
    assert parameters_named("repeats", r"\bRepeat\b")


def fields_named(name: str, annotation: str) -> list[str]:
    """Where a class of the command has a field `name` annotated to match `annotation`
    (`Speed.runs: tuple[Repeat, ...]` was one), as `file:line class`."""
    return _annotated(name, annotation, _fields)


def test_no_field_gives_a_library_word_a_second_meaning() -> None:
    found = [
        f"{where}: call it {instead!r}, not {name!r}"
        for name, annotation, instead in SECOND_MEANINGS
        for where in fields_named(name, annotation)
    ]
    assert not found, ", ".join(found)


def test_no_name_spells_a_repeat_as_a_run() -> None:
    found = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            spelled = getattr(node, "name", None) or getattr(node, "attr", None)
            spelled = spelled or getattr(node, "id", None)
            if spelled in OLD_SPELLINGS:
                where = f"{path.relative_to(COMMAND.parent)}:{node.lineno}"
                found.append(f"{where} {spelled} (now {OLD_SPELLINGS[spelled]})")
    assert not found, ", ".join(found)
