"""Tests of the host facts: best effort, never an error."""

from __future__ import annotations

import json
import re

from topos_cli.harness import host


def test_the_cpu_model_is_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU @ 3.00GHz\n",
        encoding="utf-8",
    )
    assert host.cpu_model(cpuinfo) == "Test CPU @ 3.00GHz"


def test_an_arm_cpuinfo_names_its_model(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nBogoMIPS\t: 108.00\nModel\t: Raspberry Pi 4\n", "utf-8")
    assert host.cpu_model(cpuinfo) == "Raspberry Pi 4"


def test_a_missing_cpuinfo_falls_back_without_error(tmp_path):
    model = host.cpu_model(tmp_path / "absent")
    assert model is None or isinstance(model, str)


def test_outside_a_repository_there_is_no_commit(tmp_path):
    assert host.git_commit(tmp_path) is None


def test_inside_the_project_the_commit_is_named():
    commit = host.git_commit()
    if commit is not None:  # an installed copy outside git has none, and says so
        assert re.fullmatch(r"[0-9a-f]{40}", commit.commit)
        assert commit.dirty in (True, False, None)


def test_host_facts_are_json_ready_and_complete():
    facts = host.host_facts().to_json()
    assert json.loads(json.dumps(facts, allow_nan=False)) == facts
    assert facts["python"].startswith(host.python_version().split()[0])
    assert facts["logical_cores"] >= 1
    assert facts["available_cores"] >= 1
    assert set(facts) >= {"cpu_model", "load_average", "git", "proc_filesystem"}


def test_cpu_flags_keep_only_the_extensions_that_matter_in_one_spelling(tmp_path):
    from topos_cli.harness.host import cpu_flags

    x86 = tmp_path / "x86"
    x86.write_text(
        "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: fpu sse4_2 avx avx2 fma "
        "avx512f avx512_vnni rdtscp\n"
    )
    assert cpu_flags(x86) == ["avx", "avx2", "avx512_vnni", "avx512f", "fma", "sse4_2"]
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd evtstrm asimddp sve i8mm\n")
    assert cpu_flags(arm) == ["asimddp", "i8mm", "neon", "sve"]
