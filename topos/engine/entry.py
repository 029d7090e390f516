"""Entry: a lowering request — roots to make readable, and the posture to lower in."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topos.engine.plan import Plan
    from topos.graph.network import Network


class Entry:
    """Roots of a network; `backward()` asks for the retain posture the engine route needs."""

    def __init__(self, network: Network, roots: tuple[int, ...], posture: str = "forward") -> None:
        self.network = network
        self.roots = roots
        self.posture = posture

    def backward(self) -> Entry:
        """The same request in the retain posture: every buffer a backward sweep reads is kept."""
        return Entry(self.network, self.roots, "retain")

    def lower(self) -> Plan:
        """Schedules the ancestors of the roots and decides when each buffer dies."""
        from topos.engine.plan import Plan

        return Plan(self.network, self.roots, self.posture)
