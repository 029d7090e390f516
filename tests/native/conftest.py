"""A native JAX step is a float32 program in a worker of its own; in the suite's shared
processes a peer test may have switched JAX's process-wide 64-bit mode on (a float64
emission does), which would make the step's arrays float64. Each native test starts with
it off, as a worker does, and leaves it as it found it."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def jax_in_its_default_precision():
    """JAX's 64-bit mode off for the test (where JAX is loaded at all), restored after."""
    jax = sys.modules.get("jax")
    if jax is None:
        yield
        return
    was = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", False)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", was)
