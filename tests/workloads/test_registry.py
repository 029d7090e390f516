"""Finding workloads: built in, by module:attribute, and the one-line refusals."""

import sys
import textwrap
from pathlib import Path

import pytest

from topos.training import StepSchedule, Workload
from topos.workloads import WorkloadNotFoundError, available, resolve


def test_built_in_workloads_resolve_with_the_seed_constants():
    cifar10 = resolve("cifar10")
    mnist = resolve("mnist")
    assert (cifar10.name, cifar10.batch_size, cifar10.shuffle_state) == ("cifar10", 64, 3)
    assert (mnist.name, mnist.batch_size, mnist.shuffle_state) == ("mnist", 64, 5)
    assert cifar10.learning_rate == StepSchedule(0.05, 0.005)
    assert mnist.learning_rate == StepSchedule(0.1, 0.01)
    assert {"cifar10", "mnist"} <= set(available())


def test_step_schedule_drops_after_three_quarters():
    schedule = StepSchedule(0.05, 0.005)
    rates = [schedule(step, 8) for step in range(8)]
    assert rates == [0.05] * 6 + [0.005] * 2
    assert schedule(224, 300) == 0.05 and schedule(225, 300) == 0.005


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    source = textwrap.dedent(
        """
        from topos.workloads import resolve
        import dataclasses
        tiny = dataclasses.replace(resolve("mnist"), name="tiny")
        not_a_workload = 42
        """
    )
    (tmp_path / "user_workloads.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "user_workloads"
    sys.modules.pop("user_workloads", None)


def test_module_attribute_names_a_users_workload(user_module):
    workload = resolve(f"{user_module}:tiny")
    assert isinstance(workload, Workload) and workload.name == "tiny"


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("nonesuch", "unknown workload 'nonesuch'"),
        ("no_such_module_here:thing", "cannot import 'no_such_module_here'"),
    ],
)
def test_unknown_names_are_refused_in_one_line(name, fragment):
    with pytest.raises(WorkloadNotFoundError) as caught:
        resolve(name)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_an_attribute_that_is_not_a_workload_is_refused(user_module):
    with pytest.raises(WorkloadNotFoundError, match="is a int, not a topos Workload"):
        resolve(f"{user_module}:not_a_workload")
    with pytest.raises(WorkloadNotFoundError, match="has no 'missing'"):
        resolve(f"{user_module}:missing")


def test_a_workload_with_an_unknown_route_is_refused():
    with pytest.raises(ValueError, match="unknown route 'sideways'"):
        Workload(
            name="bad",
            description="",
            record=lambda tape, rows: None,
            load_dataset=lambda directory: None,
            learning_rate=StepSchedule(0.1, 0.01),
            routes=("engine", "sideways"),
        )


WORKLOAD_FILE = """
import dataclasses
from topos.workloads import resolve
workload = dataclasses.replace(resolve("mnist"), name="from-a-file")
other = dataclasses.replace(workload, name="other")
not_a_workload = 42
"""


@pytest.fixture
def workload_file(tmp_path, monkeypatch):
    """A file defining workloads, named by its path relative to the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "my-models.py").write_text(WORKLOAD_FILE)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield "models/my-models.py"
    sys.modules.pop("my_models", None)


def test_a_file_names_a_workload_its_attribute_workload_unless_told(workload_file):
    from topos.workloads.registry import module_of

    assert resolve(workload_file).name == "from-a-file"
    assert resolve(f"{workload_file}:other").name == "other"
    # Imported once, under the file's stem made a name, its directory on the path.
    assert module_of(workload_file) == "my_models"
    assert sys.modules["my_models"].__file__.endswith("my-models.py")
    assert str((Path.cwd() / "models").resolve()) in sys.path


@pytest.mark.parametrize(
    ("attribute", "fragment"),
    [
        (":nothing", "models/my-models.py has no 'nothing'"),
        (":not_a_workload", "is a int, not a topos Workload"),
    ],
)
def test_a_file_without_the_workload_asked_is_one_line(workload_file, attribute, fragment):
    with pytest.raises(WorkloadNotFoundError) as caught:
        resolve(workload_file + attribute)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_a_file_whose_name_another_module_holds_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "textwrap.py").write_text("workload = None\n")
    with pytest.raises(WorkloadNotFoundError, match=r"'textwrap' is taken by .* rename the file"):
        resolve("textwrap.py")
    assert sys.modules["textwrap"] is textwrap
