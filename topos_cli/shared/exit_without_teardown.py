"""exit_without_teardown: how a child process of a grade ends once its work is sent.

Tearing down an interpreter full of arrays or of matplotlib's objects takes a few
hundredths to a tenth of a second, which a grade would wait for (the next worker's
turn waits for the last one's exit, the grade for its report's). A worker or a
drawing child has sent its events or written its page by then, so it flushes its
standard streams and leaves at once.
"""

from __future__ import annotations

import os
import sys


def exit_without_teardown(status: int) -> None:
    """Flushes standard output and error and ends the process with `status` at once."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(status))
