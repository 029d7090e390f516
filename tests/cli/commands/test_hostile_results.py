"""A result file is untrusted input: compare, report and history, fed generated hostile
documents (a valid result with one value replaced by something no topos writes: an
integer of 5,000 digits, a number beyond float range, `Infinity`, nesting 100,000 deep,
a string where a number belongs, a bootstrap of 10^11 resamples), end in exit 0 or 2
with one line, never a traceback, an internal error or a hang.

The commands run in this process (as `topos` runs them, through `topos_cli.app.main`),
under an alarm, so a hang fails the test instead of holding the suite.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.result_examples import example_result

#: Where a hostile value goes: every kind of field a reader reads, nested or not.
PLACES = (
    ("steps",),
    ("created",),
    ("schema",),
    ("workload", "name"),
    ("workload", "data", "fingerprint"),
    ("host", "load_average"),
    ("host", "available_cores"),
    ("settings", "threads"),
    ("settings", "environment"),
    ("verdict", "settings", "bootstrap_resamples"),
    ("verdict", "settings", "confidence"),
    ("verdict", "warnings"),
    ("repeats", 0, "step_seconds", 0),
    ("repeats", 0, "loss_bits", 0),
    ("repeats", 0, "peak_rss_bytes"),
    ("repeats", 1, "status"),
    ("repeats", 1, "facts"),
    ("repeats", 1, "facts", "ready"),
    ("repeats", 1, "facts", "ready", "shards"),
    ("repeats", 0, "facts", "rss_timeline", "points", 0),
    ("repeats", 0, "facts", "rss_timeline", "resolution_seconds"),
    ("memory_prediction", 0, "ratio"),
    ("routes", "engine", "shards"),
)

#: Raw JSON text no topos writes (some of it not JSON at all, as a damaged file holds).
HOSTILE = (
    "9" * 5000,
    "-" + "9" * 400,
    "1e400",
    "-1e400",
    "Infinity",
    "NaN",
    "[" * 100_000 + "]" * 100_000,
    '{"a":' * 50_000 + "1" + "}" * 50_000,
    '"0.1"',
    '"\\u0000$\\\\foo$"',
    "true",
    "null",
    "-1",
    "{}",
    "[]",
    "100000000000",
    str(2**64),
    "0.0",
)

MARKER = "__HOSTILE_VALUE__"


@functools.cache
def _good_text() -> str:
    """A valid result's text, made once: judging its verdict is most of what making it
    costs, and every example needs it twice."""
    return json.dumps(example_result(steps=12, repeats=2))


def _hostile_text(place: tuple, value: str) -> str:
    """A valid result with the value at `place` replaced by the raw text `value`."""
    document = json.loads(_good_text())  # a copy of its own to change
    holder = document
    for key in place[:-1]:
        holder = holder[key]
    holder[place[-1]] = MARKER
    return json.dumps(document).replace(json.dumps(MARKER), value, 1)


def _run_topos(*arguments: str, seconds: int = 120) -> tuple[int, str]:
    """Runs `topos ARGUMENTS` in this process; its exit status and standard error. An
    alarm turns a hang into a failure."""
    from topos_cli import app

    def hung(signal_number, frame):
        raise AssertionError(f"topos {' '.join(arguments)} did not end in {seconds} s")

    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_handler = sys.argv, signal.signal(signal.SIGALRM, hung)
    sys.argv = ["topos", *arguments]
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                app.main()
                status = 0
            except SystemExit as ended:
                status = ended.code if isinstance(ended.code, int) else int(bool(ended.code))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, saved_handler)
        sys.argv = saved_argv
    return status, err.getvalue()


def _assert_clean(status: int, stderr: str, allowed: tuple[int, ...]) -> None:
    assert status in allowed, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("topos: error:")]
    assert len(errors) <= 1, stderr


# 25 of the 414 (place, value) pairs a run: a hostile value the readers accept draws a
# whole report (about 1.5 s of CPU), and 40 a run cost the suite 50-70 s; each run
# draws afresh, so CI covers the pairs over its runs.
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(place=st.sampled_from(PLACES), value=st.sampled_from(HOSTILE))
def test_hostile_results_end_in_exit_0_or_2_in_one_line(tmp_path_factory, place, value):
    folder = tmp_path_factory.mktemp("hostile")
    good = folder / "good.json"
    good.write_text(_good_text())
    bad = folder / "bad.json"
    bad.write_text(_hostile_text(place, value))
    # compare may also judge (4 a regression, 5 inconclusive, 1 a route not finished).
    for old, new in ((good, bad), (bad, good)):
        status, stderr = _run_topos("compare", str(old), str(new))
        _assert_clean(status, stderr, (0, 1, 2, 4, 5))
    status, stderr = _run_topos("history", str(folder), "--html", str(folder.parent / "h.html"))
    _assert_clean(status, stderr, (0, 2))
    page = folder.parent / f"{folder.name}.html"
    status, stderr = _run_topos("report", str(bad), "--html", str(page))
    _assert_clean(status, stderr, (0, 2))


@pytest.mark.parametrize("value", ["9" * 5000, "1e400", "[" * 100_000 + "]" * 100_000])
def test_a_refused_result_names_the_file_and_what_is_wrong(tmp_path: Path, value: str):
    bad = tmp_path / "bad.json"
    bad.write_text(_hostile_text(("steps",), value))
    status, stderr = _run_topos("report", str(bad), "--html", str(tmp_path / "page.html"))
    assert status == 2
    (line,) = stderr.strip().splitlines()
    assert line.startswith(f"topos: error: {bad} is not a topos result (")
    assert not (tmp_path / "page.html").exists()


def test_a_result_asking_for_unbounded_work_is_refused(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(_hostile_text(("verdict", "settings", "bootstrap_resamples"), "10" * 6))
    status, stderr = _run_topos("compare", str(bad), str(bad))
    assert status == 2 and "bootstrap_resamples" in stderr, stderr
