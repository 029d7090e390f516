"""Primitive: one operation's shape rule, NumPy kernel and derivative rule, kept together.

A primitive's derivative rule is written once against an `Algebra`. The engine
runs it with the eager algebra (kernels on arrays); `differentiate` runs the
very same rule with the recording algebra (each operation appends a node whose
kernel is the same kernel). That is what makes the two routes bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from topos.ops.kink import Kink
from topos.ops.memory_order import Layout, LayoutRule, contiguous, identity, strided_view
from topos.tensor import Shape

ShapeRule = Callable[..., Shape]
Kernel = Callable[..., np.ndarray]
DerivativeRule = Callable[..., Sequence[Any]]
WorkspaceRule = Callable[..., int]

#: `Primitive.view` values: the kernel (called without `out`) returns a view of its
#: first operand always, or only when that operand is C-contiguous (else a copy).
VIEW_ALWAYS = "always"
VIEW_WHEN_CONTIGUOUS = "when contiguous"

REGISTRY: dict[str, Primitive] = {}


@dataclass(eq=False, repr=False, slots=True)
class Primitive:
    """An operation of the graph: how its output shape follows from its inputs'
    (`infer`), how to compute it (`kernel`, pure in its inputs' values and shapes,
    with an optional `out` array to write into), and how to send a gradient back
    to its inputs (`derive`, or None for operations nothing differentiates).

    For the static memory plan a primitive also says whether its kernel returns a
    view of its first operand (`view`: None, VIEW_ALWAYS or VIEW_WHEN_CONTIGUOUS;
    handed `out`, a viewing kernel copies into it instead), in which memory order it
    writes its output (`layout`, a rule of `memory_order`; by default C-contiguous,
    or for a kernel that always returns a view, a strided view), and optionally how many
    elements of scratch it can use (`workspace(input shapes..., **attributes)`,
    passed to the kernel as a flat `workspace=` array; with `workspace_reads_layouts`
    the rule is also given the operands' layouts, as `layouts=`). When `output_in_workspace`,
    the kernel called without `out` returns a view into that workspace, which then
    lives as long as the output; such a kernel's temporaries that never hold the
    output are its `scratch(input shapes..., **attributes)` elements, passed as a
    second flat `scratch=` array that lives only during the kernel's step.

    `index_operands` are the positions of operands that are index inputs (integer
    arrays: an embedding's token ids); every other operand is a float value, and the
    tape refuses to mix them up. An index operand never gets a gradient.

    A primitive with `value_method` is recorded by the `Value` method of its name
    (`x.exp()`, `x.maximum(y)`): its first operand is the Value, the others follow,
    Python numbers among them recorded as rank-0 leaves.

    A primitive whose derivative is not defined everywhere says where (`kink`), so a
    finite-difference check can tell a perturbation that crosses one.

    `overwrites` names the operands whose bytes the kernel may be handed as its `out`
    (an elementwise kernel: each output element reads only the same element of its
    operands). When such an operand has the output's shape and memory order, owns its
    buffer, and nothing reads it after this step, the forward memory plan lets the
    output take over its bytes (a bias added in place into the product's buffer).
    """

    name: str
    arity: int
    infer: ShapeRule
    kernel: Kernel
    derive: DerivativeRule | None
    view: str | None = None
    workspace: WorkspaceRule | None = None
    output_in_workspace: bool = False
    layout: LayoutRule | None = None  # None: the default for `view`, set on creation
    value_method: bool = False
    index_operands: tuple[int, ...] = ()
    kink: Kink | None = None
    workspace_reads_layouts: bool = False
    scratch: WorkspaceRule | None = None
    overwrites: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.scratch is not None and not self.output_in_workspace:
            raise ValueError(
                f"{self.name}: scratch is for a kernel whose output is in its workspace"
            )
        if self.layout is None:
            self.layout = strided_view if self.view == VIEW_ALWAYS else contiguous
        self.index_operands = tuple(self.index_operands)
        self.overwrites = tuple(self.overwrites)

    def workspace_elements(
        self,
        operand_shapes: Sequence[Shape],
        operand_layouts: Sequence[Layout],
        attributes: dict[str, Any],
    ) -> int:
        """Elements of scratch the kernel can use over operands of these shapes and
        layouts (0 without a workspace rule); a rule registered with
        `workspace_reads_layouts` is also given the layouts, as `layouts=`."""
        if self.workspace is None:
            return 0
        if self.workspace_reads_layouts:
            return int(self.workspace(*operand_shapes, layouts=operand_layouts, **attributes))
        return int(self.workspace(*operand_shapes, **attributes))

    def returns_view(self, operand_layouts: Sequence[Layout]) -> bool:
        """Whether the kernel, called without `out`, returns a view of its first operand
        whose operands are laid out in `operand_layouts`."""
        if self.view == VIEW_ALWAYS:
            return True
        if self.view == VIEW_WHEN_CONTIGUOUS:
            first = operand_layouts[0]
            return first is not None and first == identity(len(first))
        return False

    def output_layout(
        self,
        operand_layouts: Sequence[Layout],
        operand_shapes: Sequence[Shape],
        output: Shape,
        attributes: dict[str, Any],
    ) -> Layout:
        """The memory order of the kernel's output (of its view, when it returns one)."""
        return self.layout(operand_layouts, operand_shapes, output, attributes)

    def __repr__(self) -> str:
        return f"Primitive({self.name})"


def primitive(
    name: str, arity: int, infer: ShapeRule, derive: DerivativeRule | None, **options: Any
) -> Callable[[Kernel], Primitive]:
    """Registers the decorated kernel as primitive `name`, beside its shape and derivative
    rules; `options` are the rest of `Primitive`'s fields, by name (what the memory plan
    needs to know: `view`, `workspace`, `layout`, ...)."""

    def register(kernel: Kernel) -> Primitive:
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} is registered twice")
        registered = Primitive(name, arity, infer, kernel, derive, **options)
        REGISTRY[name] = registered
        return registered

    return register


def lookup(name: str) -> Primitive:
    """The registered primitive called `name`."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"no primitive is called {name!r}") from None
