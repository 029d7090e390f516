"""RouteProgram: a workload's model recorded, differentiated (for `recorded`) and lowered.

Everything a route needs that does not depend on data: `topos describe` stops
here, and Training adds a dataset and a batch order on top.
"""

from __future__ import annotations

import time

from topos import Adjoints, Network, Plan, Run, Tape
from topos.graph.parameter_gradients import ParameterGradients
from topos.graph.parameters import Parameters
from topos_cli.workloads.workload import Recording, Workload


class RouteProgram:
    """One route of a workload as a lowered plan.

    `engine` lowers `[loss]` in the retain posture and sweeps backward each step;
    `recorded` differentiates on the tape first and lowers one forward-only plan
    over `[loss, gradients...]`.
    """

    def __init__(self, workload: Workload, route: str) -> None:
        if route not in workload.routes:
            raise ValueError(
                f"unknown route {route!r} for workload {workload.name!r}; "
                f"choose from {', '.join(workload.routes)}"
            )
        self.workload = workload
        self.route = route
        started = time.perf_counter()
        tape = Tape()
        self.recording: Recording = workload.record(tape, workload.batch_size)
        self.forward_nodes = len(tape)
        self.adjoints: Adjoints | None = None
        if route == "recorded":
            self.adjoints = tape.differentiate(self.recording.loss, self.recording.parameters)
        self.gradient_nodes = len(tape) - self.forward_nodes
        self.network: Network = tape.into_network()
        if self.adjoints is not None:
            self.plan: Plan = self.network.entry(self.adjoints.roots()).lower()
        else:
            self.plan = self.network.entry([self.recording.loss]).backward().lower()
        self.lower_seconds = time.perf_counter() - started

    def gradients(self, run: Run, parameters: Parameters) -> ParameterGradients:
        """The route's gradients of a run: swept backward, or read off the roots."""
        if self.adjoints is not None:
            return run.recorded_gradients(self.adjoints)
        return run.backward(self.recording.loss).parameters(parameters)
