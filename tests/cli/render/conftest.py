"""The site of the CI matrix's three machines as `topos history --markdown --site` writes
it, written once a test process for the tests that read it: drawing its ten pages is
most of each such test's cost, and they only read what was written."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from tests.cli.grading import topos
from tests.cli.render.test_machines import write_artifacts


@dataclasses.dataclass(frozen=True)
class WrittenSite:
    """The artifacts a site was made from, the folder it was written to, and the run."""

    artifacts: list[Path]
    site: Path
    completed: subprocess.CompletedProcess[str]


@pytest.fixture(scope="session")
def machines_site(tmp_path_factory) -> WrittenSite:
    """The three machines' site, written by a real `topos history` (not to be changed)."""
    folder = tmp_path_factory.mktemp("machines-site")
    artifacts = write_artifacts(folder / "artifacts")
    site = folder / "site"
    completed = topos(
        "history",
        *map(str, artifacts),
        "--markdown",
        "--site",
        str(site),
        cwd=folder,
        timeout=300,
    )
    return WrittenSite(artifacts, site, completed)
