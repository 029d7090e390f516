"""A JAX step's routes in one process (tests/native/jax_regression.py, written as a user
writes one): what holds between `jit` and `checkpoint-nothing-saveable`, the optimizers a
user may name, and the route names refused in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from topos.names import missing_native_route

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def test_jit_and_nothing_saveable_are_bit_identical_on_a_small_mlp():
    # Measured, not promised: XLA compiles each route as a program of its own. On this
    # two-layer model (products and tanh) the recomputation gives the same bits: every
    # loss and every step 0 gradient. (On the example transformer the losses stay
    # bit-identical for some steps but step 0's gradients part by some 3e-7: agreement.)
    from tests.native.jax_regression import workload
    from topos.native.jax_training import JaxTraining

    trained = {}
    for route in ("jit", "checkpoint-nothing-saveable"):
        training = JaxTraining(workload, route, None, 3)
        comparison = training.compare_with_reference()
        assert comparison.loss_identical and comparison.differing_gradients == []
        assert set(comparison.gradient_errors) == {
            "hidden/bias",
            "hidden/weight",
            "out/bias",
            "out/weight",
        }
        # JAX keeps no random state: there is none to compare.
        assert comparison.rng_matches_reference is None
        trained[route] = [int(training.step(step).view(np.uint32)) for step in range(3)]
    assert trained["checkpoint-nothing-saveable"] == trained["jit"]
    # The parameters move: a loss that never changed would prove nothing.
    assert len(set(trained["jit"])) == 3


def parameters_and_gradients():
    """A small pytree and a gradient of its shape, values with inexact products."""
    parameters = {"weight": jnp.linspace(-1.0, 1.0, 12).reshape(3, 4), "bias": jnp.ones(4) / 3}
    gradients = jax.tree.map(lambda leaf: jnp.sin(leaf * 7.0) / 11.0, parameters)
    return parameters, gradients


def test_an_optax_style_transformation_and_a_plain_update_move_as_sgd_does():
    from topos.native import sgd
    from topos.native.jax_optimizer import optimizer_of

    class GradientTransformation(tuple):
        """optax's protocol, written by hand (optax is not a dependency)."""

        def __new__(cls, init, update):
            return super().__new__(cls, (init, update))

        init = property(lambda self: self[0])
        update = property(lambda self: self[1])

    learning_rate = 0.1
    optax_style = GradientTransformation(
        lambda parameters: (),
        lambda gradients, state, parameters: (
            jax.tree.map(lambda g: -learning_rate * g, gradients),
            state,
        ),
    )

    def plain(parameters, gradients, state):
        return jax.tree.map(lambda p, g: p - learning_rate * g, parameters, gradients), state

    parameters, gradients = parameters_and_gradients()
    moved = {}
    for name, optimizer in (("sgd", sgd(learning_rate)), ("optax", optax_style), ("plain", plain)):
        chosen = optimizer_of(optimizer)
        moved[name], _ = chosen.update(parameters, gradients, chosen.init(parameters))
    for name in ("optax", "plain"):
        for ours, theirs in zip(jax.tree.leaves(moved["sgd"]), jax.tree.leaves(moved[name])):
            # p + (-lr g) and p - lr g are the same float operation: the same bits.
            assert np.array_equal(np.asarray(ours), np.asarray(theirs)), name
    assert not np.array_equal(np.asarray(moved["sgd"]["weight"]), np.asarray(parameters["weight"]))


def test_adam_moves_as_its_formula_in_float64():
    from topos.native import adam

    parameters, gradients = parameters_and_gradients()
    optimizer = adam(0.01)
    state = optimizer.init(parameters)
    for _ in range(2):
        parameters_before = parameters
        parameters, state = optimizer.update(parameters, gradients, state)
    # Two steps of the same gradient: the bias-corrected moments are g and g^2 again.
    for before, after, gradient in zip(
        jax.tree.leaves(parameters_before), jax.tree.leaves(parameters), jax.tree.leaves(gradients)
    ):
        g = np.asarray(gradient, np.float64)
        expected = np.asarray(before, np.float64) - 0.01 * g / (np.abs(g) + 1e-8)
        np.testing.assert_allclose(np.asarray(after, np.float64), expected, rtol=1e-5, atol=1e-7)


def test_a_thread_count_is_refused_in_one_line():
    from tests.native.jax_regression import workload

    with pytest.raises(ValueError, match="JAX takes no thread count"):
        dataclasses.replace(workload, threads=2)


def test_an_optimizer_of_another_kind_is_refused_in_one_line():
    from topos.native.jax_optimizer import optimizer_of

    with pytest.raises(TypeError, match=r"not a str$"):
        optimizer_of("adam")


@pytest.mark.parametrize(
    ("route", "message"),
    [
        ("checkpoint-names:hidden+attention", None),
        ("checkpoint-names:1st", "name the saved values as identifiers with + between them"),
        ("remat", "the workload has no route 'remat'; its routes are jit,"),
        ("compile-budget-0.5", "or checkpoint-names:<a+b>"),
    ],
)
def test_route_names_are_judged_against_the_jax_family(route, message):
    offered = ["jit", "checkpoint-nothing-saveable", "checkpoint-dots-saveable"]
    said = missing_native_route(route, "jax", offered)
    assert said is None if message is None else message in said
