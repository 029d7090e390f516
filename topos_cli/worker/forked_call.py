"""forked_call: a computation run in a forked copy of the worker, its JSON answer sent back.

What the copy allocates, the threads it starts and the process-wide switches it sets
(JAX's 64-bit mode) die with it: the worker's own memory at ready, its step times and its
peer's float32 program are left as they would be without it. Linux only, and only while
the worker has one Python thread (forking a process with more is unsafe); elsewhere the
caller computes what it can in the worker itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from topos_cli.shared.forked_copy import ForkedCopy, forking_is_safe


def forked_call(compute: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
    """`compute()` run in a forked copy of this process and its dict, sent back as JSON;
    None when no copy could be forked or the copy did not end well."""
    if not forking_is_safe():
        return None
    copy = ForkedCopy.start(lambda: json.dumps(compute()).encode("utf-8"))
    data = None if copy is None else copy.collect()
    if data is None:
        return None
    try:
        answer = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None
