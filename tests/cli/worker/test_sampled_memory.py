"""A machine without /proc (macOS): the worker reads its resident set through psutil and
ru_maxrss, the peak is marked sampled, not exact, and the verdict and report say so."""

from __future__ import annotations

import json

from tests.cli.machines import machine_result
from topos_cli.commands.result_composition import memory_measurement
from topos_cli.judge.verdict import decide_verdict
from topos_cli.judge.verdict.noise import SAMPLED_MEMORY
from topos_cli.render.report_html import write_report
from topos_cli.result.repeat import Repeat
from topos_cli.result.result_file import read_result
from topos_cli.worker import sampled_memory
from topos_cli.worker.step_peak import StepPeak


def without_proc(monkeypatch):
    """The worker's /proc readers answer nothing, as on macOS."""
    for reader in ("resident_bytes", "high_water_bytes"):
        monkeypatch.setattr(sampled_memory.process_memory, reader, lambda: None)
    monkeypatch.setattr(sampled_memory.process_memory, "reset_high_water", lambda: False)


def test_without_proc_the_worker_still_reads_its_memory(monkeypatch):
    without_proc(monkeypatch)
    assert sampled_memory.resident_bytes() > 0  # psutil's reading
    peak = StepPeak()
    peak.read()
    assert peak.bytes is not None and peak.bytes > 0
    assert sampled_memory.max_resident_bytes() >= peak.bytes // 2


def test_ru_maxrss_counts_only_when_it_rose_during_the_steps():
    # ru_maxrss cannot be reset: a peak from loading (before ready) is not the steps'.
    assert sampled_memory.sampled_peak(100, 500, 500) == 100
    assert sampled_memory.sampled_peak(100, 500, 700) == 700
    assert sampled_memory.sampled_peak(None, None, 700) is None


def test_a_result_from_a_machine_without_proc_is_marked_sampled(tmp_path):
    data = machine_result("macos-14", repeats=3)
    result = read_result(data)
    assert result.settings.memory_measurement == "sampled"
    assert not result.host.proc_filesystem
    assert memory_measurement(result.repeats) == "sampled"
    linux = read_result(machine_result("ubuntu-latest", repeats=1))
    marked = [
        Repeat.from_json(
            {**run.to_json(), "facts": {**run.facts.to_json(), "peak_source": "VmHWM"}}
        )
        for run in linux.repeats
    ]
    assert memory_measurement(marked) == "exact"

    verdict = decide_verdict(result.repeats)
    (warning,) = [w for w in verdict.warnings if w.kind == SAMPLED_MEMORY]
    assert "sampled, not exact" in warning.message
    assert not [w for w in decide_verdict(marked).warnings if w.kind == SAMPLED_MEMORY]

    path = tmp_path / "grade-macos.json"
    path.write_text(json.dumps(data))
    (page,), _ = write_report(path)
    html = page.read_text()
    assert "measured peak (sampled, not exact: no /proc)" in html
    assert "sampled, not exact: this machine has no /proc" in html
