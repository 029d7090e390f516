"""The built-in workloads as values (`topos.workloads.cifar10.workload`, ...), and finding
any workload by name: built in, a `topos.workloads` entry point, or `module:attribute`."""

from topos.workloads.registry import WorkloadNotFoundError, available, resolve

__all__ = ["WorkloadNotFoundError", "available", "resolve"]
