"""machine_spells.py's summary: slow steps found against the lower quartile, their
utilisation, and which of them a slowed probe flags."""

from benchmarks.machine_spells import summarize


def test_a_spell_slowing_step_and_probe_alike_is_found_and_flagged():
    # quiet probes spread up to 1.15x their lowest, short of the 1.25x that flags one
    quiet = [(0.020 + i * 1e-5, 0.020 + i * 1e-5, 0.0003 + i * 1.5e-6) for i in range(30)]
    # ten steps 1.5x slower in CPU time too (nothing waited), their probes 1.5x slower
    spell = [(0.030, 0.030, 0.00045)] * 10
    figures = summarize(quiet[:15] + spell + quiet[15:])
    assert figures["steps"] == 40
    assert figures["slow_fraction"] == 0.25
    assert figures["slow_step_utilisation"] == 1.0
    assert figures["probe_flags_slow"] == 1.0
    assert figures["probe_flags_other"] == 0.0
    assert figures["probe_correlation"] > 0.95


def test_a_probe_that_does_not_slow_flags_nothing():
    quiet = [(0.020, 0.020, 0.0003 + i * 1e-7) for i in range(30)]
    spell = [(0.030, 0.030, 0.0003)] * 10
    figures = summarize(quiet + spell)
    assert figures["slow_fraction"] == 0.25
    assert figures["probe_flags_slow"] == 0.0
