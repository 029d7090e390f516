"""embedding and embedding_gradient: rows of a table picked by an index input, and the
gradient rows added back onto the table at those indices."""

from __future__ import annotations

import numpy as np

from topos.ops.emission import declare_emission
from topos.ops.example import Example, normal, on_indices, record
from topos.ops.memory_rules import MemoryRules
from topos.ops.primitive import declare_examples, primitive
from topos.ops.shape_rules import fail
from topos.tensor import Shape


def _infer_embedding(table: Shape, indices: Shape) -> Shape:
    if table.rank != 2:
        raise fail("embedding", f"table {table} must be [rows, features]")
    return Shape((*indices, table[1]))


def _derive_embedding(algebra, inputs, output, gradient, needs):
    table, indices = inputs
    rows = algebra.shape(table)[0]
    return (algebra.embedding_gradient(gradient, indices, rows=rows), None)


@primitive("embedding", 2, _infer_embedding, _derive_embedding, index_operands=(1,))
def embedding(table, indices, out=None):
    """Row `indices[...]` of `table` for every index: `[..., features]`."""
    # The feed was checked against the table's rows, so clipping never clips; "raise"
    # would make NumPy buffer the output.
    return np.take(table, indices, axis=0, out=out, mode="clip")


def _infer_embedding_gradient(gradient: Shape, indices: Shape, rows: int) -> Shape:
    if gradient.rank != indices.rank + 1 or tuple(gradient)[:-1] != tuple(indices):
        raise fail(
            "embedding_gradient",
            f"gradient {gradient} must be the indices' shape {indices} and one more axis",
        )
    if rows < 1:
        raise fail("embedding_gradient", f"a table of {rows} rows")
    return Shape((rows, gradient[-1]))


def _derive_embedding_gradient(algebra, inputs, output, gradient, needs, rows):
    # Linear in the gradient rows: its adjoint picks the rows back out.
    _, indices = inputs
    return (algebra.embedding(gradient, indices), None)


def _embedding_gradient_workspace(gradient: Shape, indices: Shape, rows: int) -> int:
    # The gradient rows sorted by index (gpt's tokens: 256 KiB a shard).
    return gradient.volume


@primitive(
    "embedding_gradient",
    2,
    _infer_embedding_gradient,
    _derive_embedding_gradient,
    memory=MemoryRules(workspace=_embedding_gradient_workspace),
    index_operands=(1,),
)
def embedding_gradient(gradient, indices, out=None, workspace=None, rows=1):
    """A `[rows, features]` table of zeros onto which each gradient row is added at its
    index, in index order (row-major over the indices), so the sum's order is fixed.

    The rows are sorted by index (a stable sort keeps index order within an index), into
    `workspace` when given, then each index's rows are summed in one reduction over its
    run, row after row; with many distinct indices, `np.add.at` does the same additions
    one row at a time.
    """
    features = gradient.shape[-1]
    if out is None:
        out = np.zeros((rows, features), dtype=gradient.dtype)
    else:
        out.fill(0)
    flat = indices.reshape(-1)
    values = np.ascontiguousarray(gradient).reshape(-1, features)
    if flat.size == 0:
        return out
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    if starts.size > _MOST_RUNS:
        np.add.at(out, flat, values)
        return out
    if workspace is not None and workspace.size >= values.size:
        sorted_rows = workspace[: values.size].reshape(values.shape)
    else:
        sorted_rows = np.empty_like(values)
    # mode="clip" never clips (the order is a permutation); "raise" would buffer the output.
    np.take(values, order, axis=0, out=sorted_rows, mode="clip")
    ends = np.append(starts[1:], ordered.size)
    for start, end, index in zip(starts.tolist(), ends.tolist(), ordered[starts].tolist()):
        # Over axis 0 of a C-ordered block NumPy adds whole rows in turn: a running sum.
        np.add.reduce(sorted_rows[start:end], axis=0, out=out[index])
    return out


#: Distinct indices past which a loop over their runs costs more than `np.add.at`.
_MOST_RUNS = 256


# Examples: what each primitive's derivative test differentiates ---------------------

declare_examples(
    "embedding",
    Example(
        "embedding",
        normal((5, 3)),
        on_indices(lambda tokens, table: record("embedding", table, tokens)),
    ),
)

declare_examples(
    "embedding_gradient",
    Example(
        "embedding_gradient",
        normal((2, 4, 3)),
        on_indices(lambda tokens, rows: record("embedding_gradient", rows, tokens, rows=6)),
    ),
)

# Emission: how each is written in PyTorch and JAX (see topos.ops.emission) ------------


def _emit_embedding_gradient(xp, gradient, indices, rows=1):
    features = gradient.shape[-1]
    flat = xp.reshape(xp.indices(indices), (-1,))
    return xp.scatter_add(rows, flat, xp.reshape(gradient, (-1, features)))


declare_emission("embedding", lambda xp, table, indices: xp.take(table, indices, 0))
declare_emission("embedding_gradient", _emit_embedding_gradient)
