"""Every derivative rule against central finite differences, in float64, by both routes.

One case per registered primitive at least (see `cases.py`), plus the composites.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.cases import ALL_CASES, FOLD_WITH_SLACK, PRIMITIVE_CASES, Case
from tests.support.routes import ROUTES, finite_differences, operations
from topos.ops import REGISTRY

RELATIVE = 1e-6
ABSOLUTE = 1e-8


def test_every_primitive_has_a_case():
    covered = {case.subject for case in PRIMITIVE_CASES}
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"registered primitives without a derivative check: {missing}"


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
