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


def test_a_remembered_interval_is_the_one_its_own_data_give():
    # The bootstrap is remembered by its data: each series must get its own interval,
    # to the bit, whether asked first, again, or after another (lists or tuples alike).
    from topos.measurement import statistics

    slow = [[1.00, 1.02, 0.99, 1.01], [1.03, 1.00, 1.02]]
    fast = [[0.80, 0.82, 0.79], [0.81, 0.83, 0.80, 0.82]]
    other = [[0.80, 0.82, 0.79], [0.81, 0.83, 0.80, 0.90]]  # one step apart from `fast`

    def fresh(new, old):
        statistics._bootstrapped_interval.cache_clear()
        return statistics.hierarchical_interval(new, old)

    expected = {name: fresh(new, slow) for name, new in (("fast", fast), ("other", other))}
    assert expected["fast"] != expected["other"]
    statistics._bootstrapped_interval.cache_clear()
    for _ in range(2):
        assert statistics.hierarchical_interval(fast, slow) == expected["fast"]
        assert statistics.hierarchical_interval(tuple(map(tuple, other)), slow) == expected["other"]
    # Another seed or resample count is another bootstrap, not the remembered one.
    assert statistics.hierarchical_interval(fast, slow, seed=7) != expected["fast"]
