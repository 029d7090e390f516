"""Remat on a deep chain: a 500-layer tanh MLP, written as a user writes one.

The walk recomputes a missing buffer's evicted ancestors before it, and restoring a
chain of them is as deep as the graph: done by recursion, a 100-layer MLP's walk
passed Python's recursion limit (`gather` -> `recompute` -> `allocate`). The walk and
its restore costs now loop over explicit stacks, and a walk that keeps getting stuck
is given up after `RESTART_WORK_LIMIT` evaluations per node (restarts included).
"""

from __future__ import annotations

from tests.engine.test_remat_schedule import simulation_inputs
from topos import Linear, Shape, Tape, Tensor, cross_entropy, init
from topos.engine.remat_schedule import RematScheduler

LAYERS = 500


def deep_mlp(layers: int = LAYERS, width: int = 8, rows: int = 64):
    """A tanh MLP of `layers` linear layers, its loss and the recorded route's roots."""
    tape = Tape()
    hidden = tape.input(Tensor.filled([rows, width], 0.5))
    targets = tape.input(Tensor.selection([layer % width for layer in range(rows)], width))
    parameters = []
    for layer in range(layers):
        linear = Linear(
            tape, init.normal(layer + 1, 0.3)(Shape([width, width])), Tensor.filled([width], 0.0)
        )
        hidden = linear.express(hidden).tanh()
        parameters += linear.parameters()
    loss = cross_entropy(hidden, targets)
    adjoints = tape.differentiate(loss.symbol, parameters)
    network = tape.into_network()
    return network, network.entry(adjoints.roots()).roots


def test_a_500_layer_mlp_is_walked_without_recursion():
    network, roots = deep_mlp()
    inputs, unconstrained = simulation_inputs(network, roots)
    scheduler = RematScheduler(*inputs)
    # 60% and 30% (near this graph's floor, 27%): long chains of evicted ancestors
    # recomputed at once, thousands of nodes deep.
    for fraction in (0.6, 0.3):
        schedule = scheduler.schedule(int(fraction * unconstrained))
        assert schedule is not None and schedule.fits
        assert schedule.recomputations > 0
        positions: dict[int, int] = {}
        # Every evaluation reads the latest evaluation of each operand before it.
        for position, evaluation in enumerate(schedule.evaluations):
            operands = network.nodes[evaluation.node].inputs
            assert evaluation.inputs == tuple(positions.get(i, -1) for i in operands)
            positions[evaluation.node] = position

    # A tenth, far below the floor: stuck recomputations of chains thousands of nodes
    # deep, restarted until the restarts' bound gives the budget up as not met (on 200
    # layers, which crashed as surely and walk four times faster).
    network, roots = deep_mlp(200)
    inputs, unconstrained = simulation_inputs(network, roots)
    assert RematScheduler(*inputs).schedule(unconstrained // 10) is None
