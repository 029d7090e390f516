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
aligned bytes, each kernel's workspace during its step, sources free), with one
relaxation: a view costs no bytes of its own and does not keep its base alive, so the
optimum here is never above the true one for graphs with views, and equal without.
"""

from __future__ import annotations

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
    best schedule's FLOPs found (None: none) and the proven lower bound on the optimum
    (None: infeasible). Both are the optimum when HiGHS finishes in time."""
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
    result = milp(
        objective,
        constraints=LinearConstraint(matrix.tocsr(), lower, upper),
        integrality=integrality,
        bounds=Bounds(low_bounds, high_bounds),
        options={"mip_rel_gap": 0.0}
        if time_limit is None
        else {"time_limit": time_limit, "mip_rel_gap": 0.0},
    )
    if result.status == 2:  # infeasible
        return None, None
    found = None if result.x is None else round(result.fun)
    bound = getattr(result, "mip_dual_bound", None)
    if result.status == 0:
        bound = found
    return found, bound
