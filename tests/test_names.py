"""Route and workload names, kept once in `topos.names` and checked without NumPy."""

import re
import subprocess
import sys

import pytest

from topos.names import BUILT_IN_WORKLOADS, UnknownNameError, check_workload_name, parse_routes


def test_routes_keep_their_order():
    assert parse_routes("recorded, engine") == ("recorded", "engine")
    assert parse_routes("engine") == ("engine",)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "names no route"),
        ("engine,,recorded", "empty name"),
        ("engine,backprop", "unknown route 'backprop'"),
        ("recorded,recorded", "named twice"),
    ],
)
def test_bad_route_lists_are_refused_in_one_line(text, fragment):
    with pytest.raises(UnknownNameError) as caught:
        parse_routes(text)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_workload_names_that_cannot_resolve_are_refused():
    for name in (*BUILT_IN_WORKLOADS, "package.module:attribute"):
        check_workload_name(name)
    with pytest.raises(UnknownNameError, match="unknown workload 'cifar100'"):
        check_workload_name("cifar100")
    with pytest.raises(UnknownNameError, match="names no workload"):
        check_workload_name(" ")
    with pytest.raises(UnknownNameError, match=r"package\.module:attribute"):
        check_workload_name(":workload")


def test_every_built_in_workload_resolves_to_its_own_name():
    from topos.workloads import resolve

    for name in BUILT_IN_WORKLOADS:
        assert resolve(name).name == name


def test_the_names_load_neither_numpy_nor_the_library():
    check = (
        "import sys, topos, topos.names; "
        "print(sorted(m for m in sys.modules if m == 'numpy' or m.startswith('topos')))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "['topos', 'topos.names']"


def test_the_library_still_exports_its_vocabulary_lazily():
    import topos

    assert topos.Tape.__name__ == "Tape" and "Tensor" in dir(topos)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = topos.Nope


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("examples/torch_transformer.py", ("examples/torch_transformer.py", "workload")),
        ("examples/torch_transformer.py:other", ("examples/torch_transformer.py", "other")),
        ("a:b/model.py:tiny", ("a:b/model.py", "tiny")),
        ("torch_transformer:workload", None),
        ("cifar10", None),
    ],
)
def test_a_workload_file_is_told_from_its_name(name, expected):
    from topos.names import workload_file_of

    assert workload_file_of(name) == expected


def test_a_workload_file_is_looked_at_but_never_imported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("raise SystemExit('imported')\n")
    check_workload_name("model.py")
    check_workload_name("model.py:other")
    (tmp_path / "folder.py").mkdir()
    for name, fragment in [
        ("missing.py", "--workload 'missing.py': no such file missing.py"),
        ("folder.py", "folder.py is not a file"),
        ("model.py:not a name", "path/to/file.py:attribute"),
    ]:
        with pytest.raises(UnknownNameError, match=re.escape(fragment)):
            check_workload_name(name)
