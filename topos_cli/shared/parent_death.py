"""A child that dies with its parent, however the parent ends.

The grade ends its children itself on Ctrl-C, SIGTERM, SIGHUP and timeouts; what it
cannot handle is being killed outright (SIGKILL, the out-of-memory killer). Linux's
PR_SET_PDEATHSIG covers that: the kernel sends the child SIGKILL when its parent dies,
even a child stopped by SIGSTOP (the report's drawing child is, while a route runs),
and even one in a session of its own, which no terminal hang-up reaches. Elsewhere
nothing is done. The workers ask for it themselves (`route_worker.die_with_parent`);
children started with `subprocess` get it from `dies_with_parent()`.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

#: `prctl` option number of PR_SET_PDEATHSIG (linux/prctl.h).
_SET_PARENT_DEATH_SIGNAL = 1


def dies_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` for `subprocess.Popen` that has the child killed when this process
    dies; `None` where Linux's `prctl` is not available.

    libc is looked up now, in the parent, so that the child between fork and exec only
    makes two system calls (no dynamic loading, which is unsafe after a fork). A parent
    that died before the request took effect is noticed (the child's parent changed)
    and the child ends at once.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def request() -> None:
        prctl(_SET_PARENT_DEATH_SIGNAL, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return request
