"""MemoryRules: the memory plan's part of a primitive's declaration, optional and checked."""

from __future__ import annotations

import pytest

from topos.ops import REGISTRY
from topos.ops.memory_order import contiguous, strided_view
from topos.ops.memory_rules import VIEW_ALWAYS, VIEW_WHEN_CONTIGUOUS, MemoryRules
from topos.ops.primitive import Primitive
from topos.ops.shape_rules import same
from topos.tensor import Shape


def test_a_primitive_that_states_no_memory_rules_gets_the_defaults():
    plain = Primitive(
        "plain", 1, same, lambda operand, out=None: operand, None, differentiable=False
    )
    assert plain.memory.view is None and plain.memory.layout is contiguous
    assert plain.memory.workspace_elements([Shape((2, 3))], [(0, 1)], {}) == 0
    assert not plain.memory.returns_view([(0, 1)], {})
    assert plain.memory.overwrites == () and not plain.memory.output_in_workspace


def test_a_view_defaults_to_a_strided_layout():
    assert MemoryRules(view=VIEW_ALWAYS).layout is strided_view
    assert MemoryRules(view=VIEW_WHEN_CONTIGUOUS).layout is contiguous


def test_a_view_when_contiguous_is_one_only_over_a_c_ordered_operand():
    rules = MemoryRules(view=VIEW_WHEN_CONTIGUOUS)
    assert rules.returns_view([(0, 1)], {})
    assert not rules.returns_view([(1, 0)], {})
    assert not rules.returns_view([None], {})


def test_a_view_rule_answers_by_the_attributes():
    # broadcast: its copying kernel (copy=True) owns its output; the other two view.
    rules = REGISTRY["broadcast"].memory
    copied, viewed = {"to_shape": (2, 3), "copy": True}, {"axis": 0, "size": 2}
    assert not rules.returns_view([()], copied)
    assert rules.returns_view([(0,)], viewed) and rules.returns_view([(0,)], {"to_shape": (2,)})
    shape = [Shape((3,))]
    assert rules.output_layout([(0,)], shape, Shape((2, 3)), viewed) is None
    assert rules.output_layout([()], [Shape(())], Shape((2, 3)), copied) == (0, 1)


def test_a_view_rule_must_answer_a_view_value():
    rules = MemoryRules(view=lambda **attributes: "sometimes")
    with pytest.raises(ValueError, match="view rule"):
        rules.returns_view([(0,)], {})


def test_scratch_needs_an_output_in_the_workspace():
    with pytest.raises(ValueError, match="scratch"):
        MemoryRules(workspace=lambda shape: 1, scratch=lambda shape: 1)


def test_an_unknown_view_is_refused():
    with pytest.raises(ValueError, match="view"):
        MemoryRules(view="sometimes")


def test_a_workspace_rule_may_read_the_layouts():
    def rule(left, right, layouts):
        return 0 if layouts == [(0, 1), (0, 1)] else left.volume

    rules = MemoryRules(workspace=rule, workspace_reads_layouts=True)
    shapes = [Shape((2, 3)), Shape((3, 4))]
    assert rules.workspace_elements(shapes, [(0, 1), (0, 1)], {}) == 0
    assert rules.workspace_elements(shapes, [(1, 0), (0, 1)], {}) == 6


def test_the_rules_are_shared_safely():
    # One frozen value serves every elementwise primitive: none can change it for all.
    with pytest.raises(AttributeError):
        REGISTRY["exp"].memory.layout = contiguous  # type: ignore[misc]
    assert REGISTRY["exp"].memory is REGISTRY["tanh"].memory
