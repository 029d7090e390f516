"""A grade under an address-space limit (`ulimit -v 250000`, issue 43 class 5): the parent
still watches its workers, each route fails with its memory error named in one line,
exit 1, and the result is written, instead of `internal error: can't start new thread`."""

from __future__ import annotations

import json
import resource
import subprocess

from tests.cli.grading import TOPOS, environment

#: What the probe set: `ulimit -v 250000` (KiB), near 250 MiB.
LIMIT_BYTES = 250 * 1024 * 1024


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def test_a_grade_under_an_address_space_limit_fails_its_routes_with_a_memory_error(tmp_path):
    result = tmp_path / "result.json"
    completed = subprocess.run(
        [*TOPOS, "grade", "--workload", "cifar10", "--steps", "3", "--json", str(result)],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_limited,
    )
    assert completed.returncode == 1, completed.stderr
    assert "internal error" not in completed.stderr and "Traceback" not in completed.stderr
    summary = [line for line in completed.stdout.splitlines() if line.startswith("engine: failed")]
    assert len(summary) == 1 and "MemoryError" in summary[0], completed.stdout
    written = json.loads(result.read_text())
    assert written["exit_status"] == 1
    assert {repeat["status"] for repeat in written["repeats"]} == {"failed"}
