"""The worker: one route in one process, its memory and its imports."""
