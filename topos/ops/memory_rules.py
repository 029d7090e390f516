"""MemoryRules: what the static memory plan needs to know about one primitive's kernel.

Most contributors never write one: a primitive without `memory` gets the defaults (its
kernel writes a fresh C-contiguous output and needs no scratch). A primitive states
these rules only when its kernel returns a view, writes another memory order, can use
scratch, or may write over an operand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from topos.ops.memory_order import (
    Layout,
    LayoutRule,
    contiguous,
    follows_dense_operand,
    identity,
    strided_view,
)
from topos.tensor import Shape

WorkspaceRule = Callable[..., int]
#: `view(**attributes)`: the `MemoryRules.view` value for a node of these attributes.
ViewRule = Callable[..., "str | None"]

#: `MemoryRules.view` values: the kernel (called without `out`) returns a view of its
#: first operand always, or only when that operand is C-contiguous (else a copy).
VIEW_ALWAYS = "always"
VIEW_WHEN_CONTIGUOUS = "when contiguous"
_VIEWS = (None, VIEW_ALWAYS, VIEW_WHEN_CONTIGUOUS)


@dataclass(frozen=True, eq=False, slots=True)
class MemoryRules:
    """How a kernel uses memory, for the static memory plan.

    `view`: None, VIEW_ALWAYS or VIEW_WHEN_CONTIGUOUS, whether the kernel returns a view
    of its first operand (handed `out`, a viewing kernel copies into it instead); or,
    for a primitive whose attributes choose between a viewing kernel and a copying one
    (`broadcast`), a rule `view(**attributes)` answering one of those three.
    `layout`: the memory order it writes its output in (a rule of `memory_order`; by
    default C-contiguous, or for a kernel that always returns a view, a strided view;
    with a view rule, whichever of the two its answer for the node's attributes says).
    `workspace(input shapes..., **attributes)`: how many elements of scratch it can use,
    passed to the kernel as a flat `workspace=` array; with `workspace_reads_layouts`
    the rule is also given the operands' layouts, as `layouts=`. When
    `output_in_workspace`, the kernel called without `out` returns a view into that
    workspace, which then lives as long as the output; such a kernel's temporaries that
    never hold the output are its `scratch(input shapes..., **attributes)` elements,
    passed as a second flat `scratch=` array that lives only during the kernel's step.
    `overwrites`: the operands whose bytes the kernel may be handed as its `out` (an
    elementwise kernel: each output element reads only the same element of its
    operands). When such an operand has the output's shape and memory order, owns its
    buffer, and nothing reads it after this step, the forward memory plan lets the
    output take over its bytes (a bias added in place into the product's buffer).
    """

    view: str | ViewRule | None = None
    layout: LayoutRule | None = None  # None: the default for `view`, set on creation
    workspace: WorkspaceRule | None = None
    workspace_reads_layouts: bool = False
    output_in_workspace: bool = False
    scratch: WorkspaceRule | None = None
    overwrites: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.scratch is not None and not self.output_in_workspace:
            raise ValueError("scratch is for a kernel whose output is in its workspace")
        if not callable(self.view) and self.view not in _VIEWS:
            raise ValueError(
                f"view is None, {VIEW_ALWAYS!r}, {VIEW_WHEN_CONTIGUOUS!r} or a rule of the "
                f"attributes"
            )
        # Frozen, since one set of rules (ELEMENTWISE) serves many primitives.
        if self.layout is None:
            if callable(self.view):
                default = _layout_of_view(self.view)
            else:
                default = strided_view if self.view == VIEW_ALWAYS else contiguous
            object.__setattr__(self, "layout", default)
        object.__setattr__(self, "overwrites", tuple(self.overwrites))

    def workspace_elements(
        self,
        operand_shapes: Sequence[Shape],
        operand_layouts: Sequence[Layout],
        attributes: dict[str, Any],
    ) -> int:
        """Elements of scratch the kernel can use over operands of these shapes and
        layouts (0 without a workspace rule); a rule declared with
        `workspace_reads_layouts` is also given the layouts, as `layouts=`."""
        if self.workspace is None:
            return 0
        if self.workspace_reads_layouts:
            return int(self.workspace(*operand_shapes, layouts=operand_layouts, **attributes))
        return int(self.workspace(*operand_shapes, **attributes))

    def view_of(self, attributes: dict[str, Any]) -> str | None:
        """The `view` value of a node with these attributes."""
        return _view_of(self.view, attributes)

    def returns_view(self, operand_layouts: Sequence[Layout], attributes: dict[str, Any]) -> bool:
        """Whether the kernel, called without `out` with these `attributes`, returns a
        view of its first operand whose operands are laid out in `operand_layouts`."""
        view = self.view_of(attributes)
        if view == VIEW_ALWAYS:
            return True
        if view == VIEW_WHEN_CONTIGUOUS:
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


def _view_of(view: str | ViewRule | None, attributes: dict[str, Any]) -> str | None:
    if not callable(view):
        return view
    answer = view(**attributes)
    if answer not in _VIEWS:
        raise ValueError(f"a view rule answered {answer!r}, not one of {_VIEWS}")
    return answer


def _layout_of_view(view: ViewRule) -> LayoutRule:
    """The default layout rule under a view rule: a strided view for the attributes whose
    kernel always returns a view, else C-contiguous."""

    def layout(
        operand_layouts: Sequence[Layout],
        operand_shapes: Sequence[Shape],
        output: Shape,
        attributes: dict[str, Any],
    ) -> Layout:
        rule = strided_view if _view_of(view, attributes) == VIEW_ALWAYS else contiguous
        return rule(operand_layouts, operand_shapes, output, attributes)

    return layout


#: The rules of an elementwise kernel of one operand: a fresh output in the memory order
#: of its dense operand (so a transposed operand does not force a copy).
ELEMENTWISE = MemoryRules(layout=follows_dense_operand)
