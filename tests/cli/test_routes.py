"""Route and workload names the parent checks without loading the library."""

import pytest

from topos_cli.errors import ToposUsageError
from topos_cli.routes import ROUTES, parse_routes
from topos_cli.workload_names import BUILT_IN, check_workload_name
from topos_cli.workloads import ROUTES as WORKLOAD_ROUTES
from topos_cli.workloads.registry import BUILT_IN as REGISTRY_BUILT_IN


def test_the_parent_knows_the_same_routes_and_workloads_as_the_library():
    assert ROUTES == WORKLOAD_ROUTES
    assert BUILT_IN == REGISTRY_BUILT_IN


def test_routes_keep_their_order():
    assert parse_routes("recorded, engine") == ("recorded", "engine")
    assert parse_routes("engine") == ("engine",)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "names no route"),
        ("engine,,recorded", "empty name"),
        ("engine,backprop", "unknown route 'backprop'"),
        ("recorded,recorded", "named twice"),
    ],
)
def test_bad_route_lists_are_usage_errors(text, fragment):
    with pytest.raises(ToposUsageError) as caught:
        parse_routes(text)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_workload_names_that_cannot_resolve_are_refused_in_the_parent():
    for name in ("cifar10", "mnist", "package.module:attribute"):
        check_workload_name(name)
    with pytest.raises(ToposUsageError, match="unknown workload 'cifar100'"):
        check_workload_name("cifar100")
    with pytest.raises(ToposUsageError, match="names no workload"):
        check_workload_name(" ")
