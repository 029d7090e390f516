"""`--tolerance`: time and memory tolerances as percentages or fractions."""

import pytest

from topos_cli.result.tolerance import CompareSettings, parse_tolerance
from topos_cli.shared.errors import ToposUsageError


@pytest.mark.parametrize(
    ("text", "time", "memory"),
    [
        (None, 0.10, 0.05),
        ("", 0.10, 0.05),
        ("20%", 0.20, 0.20),
        ("0.3", 0.30, 0.30),
        ("time=5%", 0.05, 0.05),
        ("memory=1%", 0.10, 0.01),
        ("memory=2%, time=0.15", 0.15, 0.02),
    ],
)
def test_tolerances_parse(text, time, memory):
    settings = parse_tolerance(text)
    assert settings.time_tolerance == pytest.approx(time)
    assert settings.memory_tolerance == pytest.approx(memory)
    assert settings.memory_floor_bytes == CompareSettings().memory_floor_bytes


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("fast", "'fast' is not a number"),
        ("time=-5%", "not a non-negative fraction"),
        ("time=nan", "not a non-negative fraction"),
        ("speed=5%", "expected time=10%,memory=5%"),
        ("time", "'time' is not a number"),
    ],
)
def test_bad_tolerances_are_one_line_usage_errors(text, fragment):
    with pytest.raises(ToposUsageError) as caught:
        parse_tolerance(text)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)
