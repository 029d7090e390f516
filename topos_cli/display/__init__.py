"""What people see of a grade: terminal tables, progress, units, and the verdict's report.

Nothing here imports NumPy or the library, so the grading parent stays light.
Import the submodules (`units`, `tables`, `report`, `progress`,
`download_progress`) directly.
"""
