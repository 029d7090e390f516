"""The examples run as programs: the seed's lines, route parity, and a useful classifier."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED_LINES = [
    r"route (engine|recorded): 6 steps over 60000 images",
    r"plan: (forward|retain); \d+ of \d+ nodes evaluated, \d+ readable",
    r"live volume: .*",
    r"loss step 0: \d+\.\d{6} \([0-9a-f]{8}\), step 5: \d+\.\d{6} \([0-9a-f]{8}\)",
    r"route (engine|recorded): 6 steps in \d+\.\d{3}s \(\d+\.\d ms/step\)",
]


def run(arguments, **environment):
    completed = subprocess.run(
        arguments,
        capture_output=True,
        text=True,
        cwd=EXAMPLES,
        env={**os.environ, **environment},
        timeout=600,
        check=True,
    )
    return completed.stdout.splitlines()


@pytest.fixture(scope="module")
def grading_output():
    script = [sys.executable, "mnist_grading.py"]
    return {
        route: run(script, TOPOS_ROUTE=route, TOPOS_STEPS="6") for route in ("engine", "recorded")
    }


def test_the_grading_example_prints_the_seeds_lines(grading_output):
    engine = [line for line in grading_output["engine"] if not line.startswith("recorded the")]
    for line, pattern in zip(engine, SEED_LINES, strict=True):
        assert re.fullmatch(pattern, line), line
    assert re.fullmatch(
        r"recorded the chain rule: \d+ forward nodes \+ \d+ gradient nodes",
        grading_output["recorded"][1],
    )


def test_both_routes_print_the_same_loss_line_as_topos_run(grading_output):
    loss_lines = {
        route: [line for line in lines if line.startswith("loss step")]
        for route, lines in grading_output.items()
    }
    assert loss_lines["engine"] == loss_lines["recorded"]
    cli = run(
        [sys.executable, "-m", "topos_cli.app", "train", "--workload", "mnist", "--steps", "6"]
    )
    assert [line for line in cli if line.startswith("loss step")] == loss_lines["engine"]


def test_an_unknown_route_is_refused_in_one_line():
    completed = subprocess.run(
        [sys.executable, "cifar10_grading.py"],
        capture_output=True,
        text=True,
        cwd=EXAMPLES,
        env={**os.environ, "TOPOS_ROUTE": "sideways"},
        check=False,
    )
    assert completed.returncode != 0
    assert completed.stderr.strip() == "unknown TOPOS_ROUTE 'sideways'; use engine or recorded"


def test_the_classifier_example_is_far_above_chance():
    lines = run([sys.executable, "mnist.py"], TOPOS_STEPS="200")
    assert any(line.startswith("probe plan: forward;") for line in lines)
    share = float(re.search(r"test accuracy: ([\d.]+)%", lines[-1]).group(1))
    assert share > 50.0, lines[-1]


def test_the_gpt_example_trains_and_samples():
    lines = run([sys.executable, "gpt.py"], TOPOS_STEPS="3", TOPOS_SAMPLE="20")
    assert lines[0].startswith("gpt: synthetic text")
    assert any(
        re.fullmatch(r"validation loss \d+\.\d{4} \(\d\.\d\d of ln V\)", line) for line in lines
    )
    sample = next(line for line in lines if line.startswith("sample: "))
    assert len(sample) == len("sample: ") + 20
