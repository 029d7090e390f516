"""The `topos` command: grade gradient routes in isolated processes."""

import os


def count_own_frames_as_machinery() -> None:
    """Called where a command first uses the library (never in the grading parent,
    which must not import NumPy): this package's frames are machinery, not the user's
    code, to the source locations the library records."""
    from topos.graph.source_location import count_as_machinery

    count_as_machinery(os.path.dirname(os.path.abspath(__file__)))
