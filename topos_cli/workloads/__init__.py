"""Workloads: what `topos grade` trains, and how to name your own."""

from topos_cli.workloads.registry import WorkloadNotFoundError, available, resolve
from topos_cli.workloads.route_program import RouteProgram
from topos_cli.workloads.training import Training
from topos_cli.workloads.workload import ROUTES, Recording, StepSchedule, Workload

__all__ = [
    "ROUTES",
    "Recording",
    "RouteProgram",
    "StepSchedule",
    "Training",
    "Workload",
    "WorkloadNotFoundError",
    "available",
    "resolve",
]
