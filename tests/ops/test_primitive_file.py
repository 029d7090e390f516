"""A primitive is one file: dropped into topos/ops/primitives (of a copy of the library), a
file with a FLOP count is registered, records by its own `Value` method, and the remat schedule
weighs its FLOPs, with no other file edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: A contributor's elementwise primitive, `x.<name>()`: twice each element. FLOPS is
#: what its file declares per output element (None: it declares no count).
PRIMITIVE_FILE = '''
import numpy as np

from topos.ops.memory_rules import ELEMENTWISE
from topos.ops.primitive import primitive
from topos.ops.shape_rules import same

FLOPS = {flops}


def derive(algebra, inputs, output, gradient, needs):
    return (algebra.add(gradient, gradient),)


options = {{}} if FLOPS is None else {{"flops": lambda output, operand: FLOPS * output.volume}}


@primitive("{name}", 1, same, derive, memory=ELEMENTWISE, value_method=True, **options)
def kernel(operand, out=None):
    """Twice each element."""
    return np.add(operand, operand, out=out)
'''

#: Run in the copy: the model of tests/engine's tie test (x.<name>() and x.tanh(), the
#: same size, read next by the same add), its nodes' FLOPs, and which of the two the
#: remat schedule evicts and recomputes at 768 bytes.
PROBE = """
import json
import sys

import topos
from topos import Tape, Tensor
from topos.engine.compute_cost import flops
from topos.engine.plan import Plan
from topos.engine.remat_plan import _buffer_bytes
from topos.engine.remat_schedule import RematScheduler
from topos.ops import MODULES, REGISTRY

name = sys.argv[1]
tape = Tape()
x = tape.input(Tensor.filled([64], 1.0))
dropped, tanh = getattr(x, name)(), x.tanh()
total = (-x).sum()
both = dropped + tanh
network = tape.into_network()
base = Plan(network, network.entry([both.symbol, total.symbol]).roots, "forward")
sizes, workspaces = _buffer_bytes(network.nodes, base.evaluated, base.memory, network.dtype)
schedule = RematScheduler(
    network.nodes, base.evaluated, base.roots, base.memory.storage, base.memory.views,
    sizes, workspaces,
).schedule(768)
nodes = network.nodes
print(json.dumps({
    "module": f"topos.ops.primitives.{name}" in MODULES,
    "registered": name in REGISTRY,
    "method": name in dir(x),
    "operation": nodes[dropped.index].operation,
    "flops": flops(nodes[dropped.index], nodes),
    "tanh_flops": flops(nodes[tanh.index], nodes),
    "recomputed": [
        nodes[e.node].operation for e in schedule.evaluations if e.recomputation
    ],
}))
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """A copy of the library (the repository's own is never written), with two primitive
    files dropped into its topos/ops/primitives: one that counts its FLOPs, one that does not."""
    folder = tmp_path_factory.mktemp("library")
    shutil.copytree(ROOT / "topos", folder / "topos", ignore=shutil.ignore_patterns("__pycache__"))
    for name, flops in (("costly_double", 1000), ("plain_double", None)):
        text = PRIMITIVE_FILE.format(name=name, flops=flops)
        (folder / "topos" / "ops" / "primitives" / f"{name}.py").write_text(text)
    return folder


def probe(library: Path, name: str) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(library)}
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, name],
        cwd=library,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_a_dropped_in_primitive_file_is_registered_with_its_method(library):
    found = probe(library, "costly_double")
    assert found["module"] and found["registered"] and found["method"]
    assert found["operation"] == "costly_double"


def test_remat_weighs_the_flops_a_primitive_file_declares(library):
    # Declared: 1000 FLOPs an element, so recomputing it is dear and tanh is evicted.
    costly = probe(library, "costly_double")
    assert costly["flops"] == 1000 * 64
    assert costly["recomputed"] == ["tanh"]


def test_a_primitive_without_a_count_costs_one_flop_an_element(library):
    # Not declared: one FLOP per element, as tanh: a tie, broken towards the lower node.
    plain = probe(library, "plain_double")
    assert plain["flops"] == plain["tanh_flops"] == 64
    assert plain["recomputed"] == ["plain_double"]
