"""The result of a grade: its schema (the one place a field of a result is named), how a
result file is written, read and validated, and the records it holds (a run of a route,
loss bits, tolerances). NumPy-free; both the harness and the report read it. Import the
modules directly; this package imports nothing."""
