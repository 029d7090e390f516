"""Lowering and running: Entry, Plan, Run, Gradients."""

from topos.engine.entry import Entry
from topos.engine.gradients import Gradients
from topos.engine.plan import Plan
from topos.engine.run import Run

__all__ = ["Entry", "Gradients", "Plan", "Run"]
