"""Primitive: one operation's shape rule, NumPy kernel and derivative rule, kept together.

A primitive's derivative rule is written once against an `Algebra`. The engine
runs it with the eager algebra (kernels on arrays); `differentiate` runs the
very same rule with the recording algebra (each operation appends a node whose
kernel is the same kernel). That is what makes the two routes bit-identical.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from topos.errors import RegistrationError
from topos.ops.corner import Corner
from topos.ops.emission import Emission
from topos.ops.example import Example
from topos.ops.memory_rules import MemoryRules
from topos.tensor import Shape

ShapeRule = Callable[..., Shape]
Kernel = Callable[..., np.ndarray]
DerivativeRule = Callable[..., Sequence[Any]]
#: (operand shapes, attributes) -> a kernel for operands of those shapes, or None.
Specialize = Callable[[tuple[Shape, ...], dict[str, Any]], Kernel | None]
#: (output shape, *operand shapes, **attributes) -> the kernel's floating-point operations.
FlopsRule = Callable[..., int]

REGISTRY: dict[str, Primitive] = {}


@dataclass(eq=False, repr=False, slots=True)
class Primitive:
    """An operation of the graph: how its output shape follows from its inputs'
    (`infer`), how to compute it (`kernel`, pure in its inputs' values and shapes,
    with an optional `out` array to write into), and how to send a gradient back
    to its inputs (`derive`). A primitive without a rule must say so: `derive=None`
    with `differentiable=False` (a rounding, a sampler); a gradient that reaches such a
    node is refused (NotDifferentiableError naming it), never a silent zero. A function
    flat wherever it has a derivative has a rule answering None for its input instead
    (heaviside's step, lane_argmax's lane numbers): nothing flows back, by its rule.

    The rest is optional. `memory` is what the static memory plan needs to know about
    the kernel (a view, a memory order, scratch; see `MemoryRules`): left out, the
    defaults. `examples` are the expressions its finite-difference derivative test
    differentiates (see `Example`).

    `index_operands` are the positions of operands that are index inputs (integer
    arrays: an embedding's token ids); every other operand is a float value, and the
    tape refuses to mix them up. An index operand never gets a gradient.

    A primitive with `value_method` is recorded by the `Value` method of its name
    (`x.exp()`, `x.maximum(y)`): its first operand is the Value, the others follow,
    Python numbers among them recorded as rank-0 leaves.

    A primitive whose derivative is not defined everywhere says where (`corner`), so a
    finite-difference check can tell a perturbation that crosses one.

    `emission` says how the primitive is written in the peer frameworks, PyTorch and JAX
    (see `topos.ops.emission`; declared in the primitive's module by `declare_emission`).

    `specialize(shapes, attributes)`, optional, is asked once when a plan binds its
    kernels, with the operands' shapes: it answers a callable that computes exactly what
    `kernel` does on operands of those shapes (the very NumPy call the kernel would make
    for them, without the Python that chooses it), or None to keep `kernel`. The routes
    stay bit-identical by construction: the fast form is the kernel's own branch.

    `flops(output shape, *operand shapes, **attributes)`, optional, counts the kernel's
    floating-point operations (a product's `2 m n k`), which the remat schedule weighs
    against the bytes a recomputation saves and `describe()` reports; left out, the
    engine counts one per element of the output or of the largest operand, whichever is
    more (`topos.engine.compute_cost`), right for an elementwise kernel, a reduction or
    a copy and far too few for a product.
    """

    name: str
    arity: int
    infer: ShapeRule
    kernel: Kernel
    derive: DerivativeRule | None
    memory: MemoryRules = field(default_factory=MemoryRules)
    examples: tuple[Example, ...] = ()
    value_method: bool = False
    index_operands: tuple[int, ...] = ()
    corner: Corner | None = None
    emission: Emission | None = None
    differentiable: bool = True
    specialize: Specialize | None = None
    flops: FlopsRule | None = None

    def __post_init__(self) -> None:
        self.examples = tuple(self.examples)
        self.index_operands = tuple(self.index_operands)
        if self.derive is None and self.differentiable:
            raise RegistrationError(
                f"primitive {self.name!r} has no derivative rule: give one (derive), or "
                f"declare it not differentiable with differentiable=False, so that "
                f"differentiating through it is refused instead of a silent zero gradient"
            )
        if self.derive is not None and not self.differentiable:
            raise RegistrationError(
                f"primitive {self.name!r} has a derivative rule but is declared not "
                f"differentiable; drop one of the two"
            )

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


def primitive(
    name: str,
    arity: int,
    infer: ShapeRule,
    derive: DerivativeRule | None,
    *,
    replace: bool = False,
    **options: Any,
) -> Callable[[Kernel], Primitive]:
    """Registers the decorated kernel as primitive `name`, beside its shape and derivative
    rules; `options` are the rest of `Primitive`'s fields, by name (`memory`, `examples`,
    `value_method`, `differentiable`, ...).

    A name already registered is refused (RegistrationError) unless the definition is
    the same one (re-running a notebook cell or re-importing a module: the same code for
    every rule and the same options), or `replace=True` says to replace it on purpose.
    Either way the new registration is what later recordings use; examples and an
    emission are declared afresh, below it."""

    def register(kernel: Kernel) -> Primitive:
        if not isinstance(name, str) or not name.isidentifier():
            raise RegistrationError(f"a primitive's name is an identifier, not {name!r}")
        registered = Primitive(name, arity, infer, kernel, derive, **options)
        earlier = REGISTRY.get(name)
        if earlier is not None and not replace and not same_definition(earlier, registered):
            raise RegistrationError(
                f"primitive {name!r} is already registered with another definition "
                f"({_origin(earlier.kernel)}); pass replace=True to replace it on purpose"
            )
        REGISTRY[name] = registered
        return registered

    return register


def same_definition(first: Primitive, second: Primitive) -> bool:
    """Whether two registrations define the same primitive: every rule the same code
    (compared by bytecode, constants and names, not identity, so a re-run cell matches)
    and every option equal."""
    return all(
        _fingerprint(getattr(first, field)) == _fingerprint(getattr(second, field))
        for field in first.__dataclass_fields__
        if field not in ("examples", "emission")
    )


def _fingerprint(thing: Any, depth: int = 0) -> Any:
    """What decides whether `thing` is the same definition: a function by its code (and
    the fingerprints of what it closes over), a record by its fields, an array by its
    bytes, else itself. Deep or self-referring closures stop at a few levels, by identity."""
    if depth > 4:
        return ("object", id(thing))
    deeper = depth + 1
    code = getattr(thing, "__code__", None)
    if code is not None:
        cells = []
        for cell in thing.__closure__ or ():
            try:
                cells.append(_fingerprint(cell.cell_contents, deeper))
            except ValueError:  # a cell not filled yet
                cells.append(None)
        defaults = _fingerprint(thing.__defaults__, deeper)
        # Neither the module nor the file: a re-run notebook cell has a new one of each.
        return ("function", thing.__qualname__, _code(code), tuple(cells), defaults)
    if isinstance(thing, np.ndarray):
        return ("array", thing.dtype.str, thing.shape, thing.tobytes())
    if isinstance(thing, (tuple, list)):
        return tuple(_fingerprint(each, deeper) for each in thing)
    if isinstance(thing, dict):
        return tuple((key, _fingerprint(value, deeper)) for key, value in thing.items())
    fields = getattr(thing, "__dataclass_fields__", None)
    if fields is not None:
        return (
            type(thing).__qualname__,
            *(_fingerprint(getattr(thing, f), deeper) for f in fields),
        )
    if isinstance(thing, functools.partial):
        return (
            "partial",
            _fingerprint(thing.func, deeper),
            _fingerprint(thing.args, deeper),
            _fingerprint(thing.keywords, deeper),
        )
    return thing


def _code(code: Any) -> tuple:
    constants = tuple(
        _code(constant) if hasattr(constant, "co_code") else constant for constant in code.co_consts
    )
    return (code.co_code, constants, code.co_names)


def _origin(function: Any) -> str:
    """Where a kernel was defined, as an error names it."""
    code = getattr(function, "__code__", None)
    if code is None:
        return repr(function)
    return (
        f"{function.__module__}.{function.__qualname__} at {code.co_filename}:{code.co_firstlineno}"
    )


def lookup(name: str) -> Primitive:
    """The registered primitive called `name`."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"no primitive is called {name!r}") from None


def declare_examples(name: str, *examples: Example) -> None:
    """Adds `examples` to primitive `name`'s: what its derivative test differentiates.
    Called in the primitive's own module, below its registration."""
    if not examples:
        raise ValueError(f"{name}: declare at least one example")
    registered = lookup(name)
    registered.examples = registered.examples + tuple(examples)
