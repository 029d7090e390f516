"""A worker imports what training needs and no more: every module it loads stays resident
for the whole run (HTTP and TLS alone some 8 MiB, package metadata some 3 MiB)."""

import json
import subprocess
import sys

from tests.cli.grading import ROOT, environment

#: Modules a training process never uses: downloading (`topos data fetch`) and package
#: metadata (entry-point workloads, the tool's version) load them where they are needed.
UNUSED = ("ssl", "http.client", "urllib.request", "email", "importlib.metadata", "tarfile")

PROGRAM = """
import json, sys
from topos_cli.worker import route_worker
from topos.training import Training
from topos.workloads import resolve
workload = resolve("cifar10")
dataset = workload.dataset(None)
print(json.dumps(sorted(sys.modules)))
"""


def test_a_worker_loads_no_downloading_nor_package_metadata():
    completed = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = set(json.loads(completed.stdout))
    assert not loaded & set(UNUSED), sorted(loaded & set(UNUSED))
