"""How a compiled native route's agreement is said (issue 48, found grading a model of
one's own): a compiled step whose dropout draws from its compiler's own generator has
step 0 gradients far from eager's, and an agreeing verdict must say why rather than print
a large error bare; a diverging one reads as a sentence."""

from __future__ import annotations

import struct

from topos_cli.judge.verdict import decide_verdict
from topos_cli.result.repeat import Repeat


def _bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _run(route: str, losses: list[float], native: dict) -> Repeat:
    """A run of a PyTorch step's route with the ready facts its worker gives."""
    facts = {"framework": "torch", "reference": "eager", **native}
    return Repeat(
        route,
        0,
        "ok",
        tuple(_bits(loss) for loss in losses),
        tuple(0.01 for _ in losses),
        facts={"ready": {"native": facts}},
    )


EAGER = [2.3, 2.2, 2.1]
COMPILED = {
    "exact": False,
    "rng_matches_reference": False,
    "gradient_errors": {"head.weight": 0.059, "head.bias": 0.01},
    "gradient_scale": 1.0,
    "differing_gradients": ["head.weight", "head.bias"],
}


def _verdict(compiled_losses: list[float], native: dict):
    eager = _run("eager", EAGER, {"exact": True})
    return decide_verdict([eager, _run("compile", compiled_losses, native)])


def test_an_agreeing_compiled_route_names_its_own_dropout_masks():
    verdict = _verdict([loss * (1 + 2e-4) for loss in EAGER], COMPILED)
    (agreement,) = verdict.agreements
    assert agreement.status == "agrees"
    clause = agreement.describe()
    assert "largest error on the model's gradient scale 0.059 (head.weight)" in clause
    assert "its random state after step 0 not eager's" in clause, clause
    assert "dropout masks" in verdict.summary
    assert agreement.record().random_state_differs is True


def test_an_agreeing_compiled_route_with_eagers_random_state_says_nothing_of_masks():
    verdict = _verdict(
        [loss * (1 + 2e-4) for loss in EAGER], {**COMPILED, "rng_matches_reference": True}
    )
    (agreement,) = verdict.agreements
    assert "random state" not in agreement.describe() and "dropout" not in verdict.summary


def test_a_diverging_compiled_route_reads_as_a_sentence():
    verdict = _verdict([loss * 1.05 for loss in EAGER], COMPILED)
    (agreement,) = verdict.agreements
    clause = agreement.describe()
    assert "beyond a relative loss difference of 0.001 (largest 0.048)" in clause, clause
    assert "beyond within" not in clause
    assert "its random state after step 0 is not eager's" in clause
