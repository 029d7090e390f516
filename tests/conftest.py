"""Suite-wide settings: the project's bytecode compiled where Python writes none, the
synthetic-data cache, the temporary files and the compile and font caches in temporary
folders (never the user's home or the machine's /tmp), reports off unless a test asks,
and one BLAS thread a test process; subprocesses (workers, examples) inherit the
environment's part."""

import compileall
import os
import sys
from pathlib import Path

import pytest

#: The project's root: its packages are what every `topos` and worker process imports.
ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    """Where bytecode is not written (PYTHONDONTWRITEBYTECODE, as some CI images set),
    compiles the project's packages once before the tests start: the suite starts
    thousands of Python processes (graders, workers, shard processes), and each would
    compile every module of topos it imports from source (the CLI tests took 300 s on
    two workers without the bytecode, 267 s with it). Done by the controlling process
    alone, not by every xdist worker."""
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        for package in ("topos", "topos_cli", "tests"):
            compileall.compile_dir(ROOT / package, quiet=1)


@pytest.fixture(scope="session", autouse=True)
def private_synthetic_cache(tmp_path_factory):
    previous = os.environ.get("TOPOS_CACHE_DIR")
    os.environ["TOPOS_CACHE_DIR"] = str(tmp_path_factory.mktemp("topos-cache"))
    yield
    if previous is None:
        os.environ.pop("TOPOS_CACHE_DIR", None)
    else:
        os.environ["TOPOS_CACHE_DIR"] = previous


@pytest.fixture(scope="session", autouse=True)
def private_temporary_and_cache_folders(tmp_path_factory):
    """Every process the suite starts keeps its temporary files (a grade killed on
    purpose leaves its schedules' folder behind), torch.compile's kernel cache and
    matplotlib's font cache in the session's own temporary folder, never in the
    machine's /tmp or the user's home: a test touches nothing outside its own files."""
    names = ("TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "MPLCONFIGDIR")
    previous = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ[name] = str(tmp_path_factory.mktemp(name.lower()))
    yield
    for name, value in previous.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session", autouse=True)
def reports_off_unless_asked():
    """A grade's HTML report costs a child process and a few seconds; the tests of the
    report turn it back on (`TOPOS_REPORT=on`) where they look at it."""
    previous = os.environ.get("TOPOS_REPORT")
    os.environ["TOPOS_REPORT"] = "off"
    yield
    if previous is None:
        os.environ.pop("TOPOS_REPORT", None)
    else:
        os.environ["TOPOS_REPORT"] = previous


@pytest.fixture(scope="session", autouse=True)
def one_blas_thread_a_test_process():
    """The suite runs a test process per core (`-n auto`), and each also starts workers:
    OpenBLAS's default of a thread per core would put spinning threads beside busy ones,
    which starve each other (`topos.training.blas_threads`; mnist's 200 steps took 18.7 s
    on two threads beside other work against 3.7 s on one). A test that needs two threads
    raises the limit itself, as `threadpool_limits` nests."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
