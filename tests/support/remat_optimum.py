"""The optimal remat schedule of a small graph, as a mixed-integer program: the reference
the greedy (topos/engine/remat_schedule.py) is measured against.

Checkmate's formulation (Jain et al., "Checkmate: Breaking the Memory Wall with Optimal
Tensor Rematerialization", MLSys 2020), solved by SciPy's `milp` (HiGHS). The plan's
computed nodes, in recording order, are stages: stage t evaluates node t, after
(re)computing whatever of its ancestry it needs. Binaries R[t, i] (node i evaluated in
stage t), S[t, i] (node i's buffer kept from stage t-1 into stage t) and FREE[t, i, k]
(node i's buffer freed right after node k is evaluated in stage t); U[t, k] the bytes
live while node k is evaluated in stage t. Constraints: R[t, t] = 1; an evaluation's
operands are evaluated in its stage or kept into it; what is kept was there in the
stage before; a root, once evaluated, is kept to the end; FREE only where no later
evaluation of the stage reads the buffer and it is not kept; U[t, k] plus the kernel's
workspace within the budget. Objective: the FLOPs of every evaluation beyond the
first (`compute_cost.flops`), the recomputed FLOPs a RematPlan reports.

The memory model is the greedy simulation's (`RematScheduler`'s tables: each storage's
aligned bytes, each kernel's workspace during its step, sources free): a view costs no
bytes of its own and keeps its base's buffer (its storage) live while it is kept or
read. (Without that last constraint the program let gpt's one block fit 90% of its
recorded plan with nothing recomputed, where the recording order peaks at 94% with its
views keeping their bases.)
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from topos.engine.compute_cost import flops
from topos.engine.remat_schedule import RematScheduler


def optimal_extra_flops(
    scheduler: RematScheduler, nodes, views, budget: int, time_limit: float | None = 20.0
) -> tuple[int | None, float | None]:
    """The fewest recomputed FLOPs of any schedule within `budget` bytes in the greedy's
    memory model (see the module), as HiGHS leaves it after `time_limit` seconds (None:
    until it is done): the
    best schedule's FLOPs found (None: none in time) and the proven lower bound on the
    optimum (None: proven infeasible; 0 when out of time before any bound). Both are the
    optimum when HiGHS finishes in time."""
    objective, constraints, integrality, low_bounds, high_bounds, recomputing = _program(
        scheduler, nodes, views, budget
    )
    options = {"mip_rel_gap": 0.0}
    if time_limit is not None:
        options["time_limit"] = time_limit
    # First with nothing recomputed: where that fits, it is the optimum, proven at once
    # (HiGHS, given the whole program of a transformer block, often finds no schedule at
    # all in a minute where this one fits).
    none_recomputed = high_bounds.copy()
    none_recomputed[recomputing] = 0
    result = milp(
        objective,
        constraints=constraints,
        integrality=integrality,
        bounds=Bounds(low_bounds, none_recomputed),
        options=options,
    )
    if result.status == 0:
        return 0, 0.0
    result = milp(
        objective,
        constraints=constraints,
        integrality=integrality,
        bounds=Bounds(low_bounds, high_bounds),
        options=options,
    )
    if result.status == 2:  # infeasible
        return None, None
    found = None if result.x is None else round(result.fun)
    bound = getattr(result, "mip_dual_bound", None)
    if bound is None or not np.isfinite(bound):
        bound = 0.0  # out of time before any bound: no schedule recomputes less than none
    if result.status == 0:
        bound = found
    return found, bound


def relaxed_extra_flops(
    scheduler: RematScheduler, nodes, views, budget: int, time_limit: float | None = 60.0
) -> float | None:
    """The optimum of the program's linear relaxation (every binary between 0 and 1): a
    lower bound on the recomputed FLOPs of any schedule within `budget`, found where
    the mixed-integer solve finds neither a schedule nor a bound in time (a transformer
    block). `math.inf` where the relaxation is infeasible (so is every schedule); None
    where HiGHS does not solve it within `time_limit` seconds."""
    objective, constraints, integrality, low_bounds, high_bounds, _ = _program(
        scheduler, nodes, views, budget
    )
    options = {} if time_limit is None else {"time_limit": time_limit}
    result = milp(
        objective,
        constraints=constraints,
        integrality=np.zeros_like(integrality),
        bounds=Bounds(low_bounds, high_bounds),
        options=options,
    )
    if result.status == 2:
        return math.inf
    return float(result.fun) if result.status == 0 else None


def _program(scheduler: RematScheduler, nodes, views, budget: int):
    """Checkmate's program for `budget` (see the module): the objective, the constraints,
    the integrality, the variables' bounds, and the columns of the recomputations."""
    order = [i for i in scheduler.evaluated if not scheduler.is_source[i]]
    position = {node: p for p, node in enumerate(order)}
    count = len(order)
    size = [scheduler.size[node] if scheduler.storage[node] == node else 0 for node in order]
    workspace = [scheduler.workspace[node] for node in order]
    work = [flops(nodes[node], nodes, node in views) for node in order]
    dependencies = [
        sorted({position[i] for i in scheduler.inputs[node] if i in position}) for node in order
    ]
    users: list[list[int]] = [[] for _ in range(count)]
    for p, deps in enumerate(dependencies):
        for d in deps:
            users[d].append(p)
    roots = {position[r] for r in scheduler.roots if r in position}

    variables: dict[tuple, int] = {}

    def var(*key) -> int:
        return variables.setdefault(key, len(variables))

    for t in range(count):
        for i in range(t + 1):
            var("R", t, i)
            var("U", t, i)
        for i in range(t):
            var("S", t, i)
        for i in range(t + 1):
            for k in [i, *users[i]]:
                if k <= t:
                    var("F", t, i, k)
    rows: list[int] = []
    columns: list[int] = []
    values: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def constrain(terms: dict[int, float], low: float, high: float) -> None:
        row = len(lower)
        for column, value in terms.items():
            rows.append(row)
            columns.append(column)
            values.append(value)
        lower.append(low)
        upper.append(high)

    def kept(t: int, i: int):
        """S[t, i] as a term: None where it is a constant (returned as such)."""
        if t >= count:  # after the last stage: only the roots are kept
            return 1.0 if i in roots else 0.0
        if i >= t:
            return 0.0
        return var("S", t, i)

    infinity = np.inf
    for t in range(count):
        constrain({var("R", t, t): 1.0}, 1.0, 1.0)
        for i in range(t + 1):
            for d in dependencies[i]:
                # R[t, i] <= R[t, d] + S[t, d]
                terms = {var("R", t, i): 1.0, var("R", t, d): -1.0}
                if d < t:
                    terms[var("S", t, d)] = -1.0
                constrain(terms, -infinity, 0.0)
        for i in range(t + 1):
            following = kept(t + 1, i)
            if isinstance(following, float):
                continue
            # S[t+1, i] <= S[t, i] + R[t, i]
            terms = {following: 1.0, var("R", t, i): -1.0}
            if i < t:
                terms[var("S", t, i)] = -1.0
            constrain(terms, -infinity, 0.0)
            if i in roots:
                constrain({following: 1.0}, 1.0, 1.0)
        # FREE[t, i, k] <= R[t, k]; + S[t+1, i] <= 1; + R[t, j] <= 1 for later users j.
        for i in range(t + 1):
            following = kept(t + 1, i)
            for k in [i, *users[i]]:
                if k > t:
                    continue
                free = var("F", t, i, k)
                if following == 1.0 or i in roots:
                    constrain({free: 1.0}, 0.0, 0.0)
                    continue
                constrain({free: 1.0, var("R", t, k): -1.0}, -infinity, 0.0)
                if not isinstance(following, float):
                    constrain({free: 1.0, following: 1.0}, -infinity, 1.0)
                for j in users[i]:
                    if k < j <= t:
                        constrain({free: 1.0, var("R", t, j): 1.0}, -infinity, 1.0)
        # U[t, 0] = sum S[t, i] m_i + m_0 R[t, 0]; U[t, k] = U[t, k-1] + m_k R[t, k]
        #   - sum over i of m_i FREE[t, i, k-1]; U[t, k] + workspace_k R[t, k] <= budget.
        for k in range(t + 1):
            terms: dict[int, float] = {var("U", t, k): 1.0, var("R", t, k): -float(size[k])}
            if k == 0:
                for i in range(t):
                    if size[i]:
                        terms[var("S", t, i)] = -float(size[i])
            else:
                terms[var("U", t, k - 1)] = -1.0
                for i in [k - 1, *dependencies[k - 1]]:
                    if size[i] and ("F", t, i, k - 1) in variables:
                        key = var("F", t, i, k - 1)
                        terms[key] = terms.get(key, 0.0) + float(size[i])
            constrain(terms, 0.0, 0.0)
            constrain({var("U", t, k): 1.0, var("R", t, k): float(workspace[k])}, -infinity, budget)
    # A view's buffer is its storage's (its base's): while the view is kept, or read
    # later in the stage, or kept after it, the base stays (as the greedy's simulation
    # keeps a storage while any node of it is live).
    for p_view, node in enumerate(order):
        base = scheduler.storage[node]
        if base == node or base not in position:
            continue
        p_base = position[base]
        for t in range(count):
            if p_view < t:
                constrain({var("S", t, p_view): 1.0, var("S", t, p_base): -1.0}, -infinity, 0.0)
            following = kept(t + 1, p_view)
            for k in [p_base, *users[p_base]]:
                if k > t or ("F", t, p_base, k) not in variables:
                    continue
                free = var("F", t, p_base, k)
                if following == 1.0:
                    constrain({free: 1.0}, 0.0, 0.0)
                    continue
                if not isinstance(following, float):
                    constrain({free: 1.0, following: 1.0}, -infinity, 1.0)
                for j in users[p_view]:
                    if k < j <= t:
                        constrain({free: 1.0, var("R", t, j): 1.0}, -infinity, 1.0)
    objective = np.zeros(len(variables))
    integrality = np.ones(len(variables))
    low_bounds = np.zeros(len(variables))
    high_bounds = np.ones(len(variables))
    for key, column in variables.items():
        if key[0] == "R" and key[2] < key[1]:
            objective[column] = work[key[2]]
        if key[0] == "U":
            integrality[column] = 0
            high_bounds[column] = infinity
    matrix = coo_matrix((values, (rows, columns)), shape=(len(lower), len(variables)))
    constraints = LinearConstraint(matrix.tocsr(), lower, upper)
    recomputing = [c for key, c in variables.items() if key[0] == "R" and key[2] < key[1]]
    return objective, constraints, integrality, low_bounds, high_bounds, recomputing


def one_block_transformer(kind: str, context: int = 16, features: int = 8, rows: int = 2):
    """A one-block `gpt` (topos.models.GPT) or `llama` (topos.models.Llama) at tiny sizes,
    recorded as the workloads record it (tokens and targets `[rows, context]`, the mean
    cross-entropy, its gradients with respect to every parameter): the network and the
    roots a remat lowering plans for. Two heads, a vocabulary of 8; activations outweigh
    the parameters, as on the built-ins."""
    from topos import Indices, Tape, cross_entropy
    from topos.models.gpt import GPT, GPTShape
    from topos.models.llama import Llama, LlamaShape

    vocabulary, heads = 8, 2
    tape = Tape()
    if kind == "gpt":
        model = GPT(tape, GPTShape(vocabulary, context, features, heads, blocks=1))
    elif kind == "llama":
        shape = LlamaShape(vocabulary, context, features, heads, layers=1, hidden=2 * features)
        model = Llama(tape, shape)
    else:
        raise ValueError(f"one_block_transformer: {kind!r} is neither gpt nor llama")
    tokens = tape.input(Indices.zeros([rows, context], vocabulary))
    targets = tape.input(Indices.zeros([rows, context], vocabulary))
    loss = cross_entropy(model.express(tokens), targets)
    adjoints = tape.differentiate(loss.symbol, list(model.named_parameters().values()))
    network = tape.into_network()
    return network, network.entry(adjoints.roots()).roots
