"""einsum: Einstein summation over one or more Values (`torch.einsum`), recorded from
`permute`, `reshape`, `sum`, `mul` and `matmul`.

Operands are contracted left to right, two at a time. Each pair's letters fall into
four kinds: in both and still wanted (batch), in both and summed (contracted), in one
alone (free). A letter wanted by neither the output nor a later operand is summed out
of its operand first. The pair becomes one product: the left operand arranged as
`[batch, free, contracted]`, the right as `[batch, contracted, free]`, one `matmul`
(`ij,jk->ik` is exactly `a @ b`; `bij,bjk->bik` is the batched product), and the
result permuted to the letters' order. With nothing free on either side
(`bi,bi->b`), the pair is an elementwise product summed over the contracted letters.

Not supported (a clear error): `...`, a letter repeated within one operand (a
diagonal), and extents that would broadcast (each letter has one extent everywhere).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topos.errors import ShapeError

if TYPE_CHECKING:
    from topos.graph.value import Value


def _parse(equation: str, count: int) -> tuple[list[str], str]:
    """The operands' letters and the output's (implicit: the letters seen once, sorted)."""
    text = equation.replace(" ", "")
    if "." in text:
        raise ShapeError(f"einsum: {equation!r}: '...' is not supported; name every axis")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ShapeError(f"einsum: {equation!r} names {len(terms)} operand(s), given {count}")
    for term in [*terms, output]:
        if not all(letter.isalpha() for letter in term):
            raise ShapeError(f"einsum: {equation!r}: subscripts are letters, not {term!r}")
        if len(set(term)) != len(term):
            raise ShapeError(
                f"einsum: {equation!r}: {term!r} repeats a letter (diagonals are not supported)"
            )
    seen = "".join(terms)
    if not arrow:
        output = "".join(sorted(letter for letter in set(seen) if seen.count(letter) == 1))
    for letter in output:
        if letter not in seen:
            raise ShapeError(f"einsum: {equation!r}: output letter {letter!r} is in no operand")
    return terms, output


def _arranged(value: Value, letters: str, order: str) -> Value:
    """`value` (axes named by `letters`) with its axes in `order`."""
    if letters == order:
        return value
    return value.permute(*(letters.index(letter) for letter in order))


def _summed_out(value: Value, letters: str, wanted: set[str]) -> tuple[Value, str]:
    """`value` with the axes of the letters not `wanted` summed out."""
    dropped = [position for position, letter in enumerate(letters) if letter not in wanted]
    if not dropped:
        return value, letters
    if len(dropped) == len(letters):
        return value.sum(), ""
    kept = "".join(letter for letter in letters if letter in wanted)
    return value.sum(dropped), kept


def _pair(left: Value, left_letters: str, right: Value, right_letters: str, wanted: set[str]):
    """The contraction of two operands, keeping the `wanted` letters."""
    left, left_letters = _summed_out(left, left_letters, wanted | set(right_letters))
    right, right_letters = _summed_out(right, right_letters, wanted | set(left_letters))
    batch = "".join(x for x in left_letters if x in right_letters and x in wanted)
    contracted = "".join(x for x in left_letters if x in right_letters and x not in wanted)
    left_free = "".join(x for x in left_letters if x not in right_letters)
    right_free = "".join(x for x in right_letters if x not in left_letters)
    if not left_free and not right_free:
        order = batch + contracted
        product = _arranged(left, left_letters, order) * _arranged(right, right_letters, order)
        if not contracted:
            return product, batch
        return _summed_out(product, order, set(batch))
    extent = {}
    for value, letters in ((left, left_letters), (right, right_letters)):
        for letter, size in zip(letters, value.shape):
            extent.setdefault(letter, size)

    def volume(letters: str) -> int:
        total = 1
        for letter in letters:
            total *= extent[letter]
        return total

    lead = (volume(batch),) if batch else ()
    rows, depth, columns = volume(left_free), volume(contracted), volume(right_free)
    matrix = _arranged(left, left_letters, batch + left_free + contracted)
    matrix = matrix.reshape(*lead, rows, depth)
    other = _arranged(right, right_letters, batch + contracted + right_free)
    other = other.reshape(*lead, depth, columns)
    product = matrix.tape.record("matmul", (matrix, other))
    letters = batch + left_free + right_free
    extents = tuple(extent[letter] for letter in letters)
    if tuple(product.shape) != extents:
        product = product.reshape(*extents)
    return product, letters


def einsum(equation: str, *operands: Value) -> Value:
    """Einstein summation (`torch.einsum("ij,jk->ik", a, b)`): the operands' axes named
    by letters, the letters missing from the output summed over (see the module)."""
    from topos.graph.value import Value

    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands or not all(isinstance(operand, Value) for operand in operands):
        raise TypeError("einsum: the operands must be Values")
    terms, output = _parse(equation, len(operands))
    for operand, letters in zip(operands, terms):
        if operand.shape.rank != len(letters):
            raise ShapeError(
                f"einsum: {equation!r}: {letters!r} names {len(letters)} axes of shape "
                f"{operand.shape}"
            )
    extent: dict[str, int] = {}
    for operand, letters in zip(operands, terms):
        for letter, size in zip(letters, operand.shape):
            if extent.setdefault(letter, size) != size:
                raise ShapeError(
                    f"einsum: {equation!r}: letter {letter!r} has extents {extent[letter]} "
                    f"and {size}"
                )
    result, letters = operands[0], terms[0]
    for position in range(1, len(operands)):
        later = set(output).union(*terms[position + 1 :])
        result, letters = _pair(result, letters, operands[position], terms[position], later)
    result, letters = _summed_out(result, letters, set(output))
    return _arranged(result, letters, output)
