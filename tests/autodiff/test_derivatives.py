"""Every derivative rule against central finite differences, in float64, by both routes.

One case per example a registered primitive declares (at least one each, beside it in
its module; gathered in `cases.py`), plus the composites.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cases import ALL_CASES, FOLD_WITH_SLACK, PRIMITIVE_CASES, Case
from tests.support.routes import ROUTES, finite_differences, operations
from topos.ops import REGISTRY, Primitive
from topos.ops.shape_rules import same

RELATIVE = 1e-6
ABSOLUTE = 1e-8


def without_a_case(cases: list[Case]) -> list[str]:
    """The registered primitives no case is about."""
    return sorted(set(REGISTRY) - {case.subject for case in cases})


def test_every_primitive_has_a_case():
    missing = without_a_case(PRIMITIVE_CASES)
    assert not missing, f"registered primitives without an example: {missing}"


def test_example_names_are_unique():
    # An example's name fixes its seed and its test id: two alike would hide one.
    names = [case.name for case in PRIMITIVE_CASES]
    assert sorted(name for name in set(names) if names.count(name) > 1) == []


def test_a_primitive_without_an_example_is_caught(monkeypatch: pytest.MonkeyPatch):
    # A primitive registered with no example gets no case, and the check above names it.
    bare = Primitive(
        "without_example", 1, same, lambda operand, out=None: operand, None, differentiable=False
    )
    monkeypatch.setitem(REGISTRY, bare.name, bare)
    cases = [Case(e.name, p.name, e.draw, e.build) for p in REGISTRY.values() for e in p.examples]
    assert without_a_case(cases) == ["without_example"]


@pytest.mark.parametrize("case", PRIMITIVE_CASES, ids=repr)
def test_case_records_its_subject(case: Case):
    # A case named after a primitive really exercises that primitive.
    assert case.subject in operations(case.build, case.arrays())


def check_against_finite_differences(case: Case, route: str) -> None:
    arrays = case.arrays()
    outcome = ROUTES[route](case.build, arrays, case.seed, np.float64)
    numeric = finite_differences(case.build, arrays, case.seed)
    assert len(outcome.gradients) == len(numeric) == len(arrays)
    for position, (analytic, expected, array) in enumerate(zip(outcome.gradients, numeric, arrays)):
        assert analytic.dtype == np.float64
        assert analytic.shape == array.shape, f"gradient {position} has the wrong shape"
        np.testing.assert_allclose(
            analytic, expected, rtol=RELATIVE, atol=ABSOLUTE, err_msg=f"gradient {position}"
        )


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("case", ALL_CASES, ids=repr)
def test_gradient_matches_finite_differences(case: Case, route: str):
    check_against_finite_differences(case, route)


@pytest.mark.parametrize("case", ALL_CASES, ids=repr)
def test_case_is_not_trivially_flat(case: Case):
    # A check against an all-zero gradient would prove little: every case but the
    # heaviside (flat wherever it is differentiable) must move its loss.
    numeric = finite_differences(case.build, case.arrays(), case.seed)
    flat = [np.all(np.abs(gradient) < 1e-6) for gradient in numeric]
    if case.subject == "heaviside":
        assert flat == [False]  # `a.heaviside() * a` still moves through its right factor
    else:
        assert not any(flat)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_fold_onto_a_longer_axis(route: str):
    check_against_finite_differences(FOLD_WITH_SLACK, route)
