"""The harness: prepares a grade, starts and supervises its workers (turns, deadlines,
signals, resident memory), gathers their runs and writes the result. It imports nothing
of the report but the result schema. NumPy-free: the grading parent stays light."""
