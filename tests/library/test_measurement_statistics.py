"""The statistics every judgement of time rests on are the library's, NumPy-free: the
grader's judge reads them from `topos.measurement.statistics` (one module, not a copy),
and importing them loads neither NumPy nor the rest of the library (issue 44)."""

from __future__ import annotations

import os

from tests.conftest import ROOT
from tests.support.parent_process import heavy_modules_loaded


def test_the_judge_reads_the_librarys_statistics():
    from topos.measurement import statistics
    from topos_cli.judge import statistics as judged

    for name in ("median", "quartiles", "hierarchical_interval", "welch_p_value"):
        assert getattr(judged, name) is getattr(statistics, name)
    assert statistics.welch_p_value([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]) < 0.01


def test_importing_them_loads_no_numpy(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    loaded, completed = heavy_modules_loaded(
        "import topos.measurement.statistics", tmp_path, environment
    )
    assert completed.returncode == 0, completed.stderr
    assert loaded == "loaded []"
