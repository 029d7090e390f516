"""The checking tests register a user's primitive (`user_softplus`); it is unregistered after
them, so the rest of the suite sees only the project's own primitives."""

import pytest

from topos.ops import REGISTRY


@pytest.fixture(scope="package", autouse=True)
def unregister_the_users_primitive():
    yield
    REGISTRY.pop("user_softplus", None)
