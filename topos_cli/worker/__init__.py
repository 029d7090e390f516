"""The worker: one route of one workload trained in a process of its own
(`python -m topos_cli.worker`), measured, and reported to the harness as typed events
(`protocol`). The only part of the command that imports NumPy and the library."""
