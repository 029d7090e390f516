"""The `topos` console script: what runs before anything else is imported.

Two things must hold from the first instant, before the command-line
framework (typer, click, rich) takes its fraction of a second to import:
the standard streams cannot fail the command (`output_stream`), and Ctrl-C
or SIGTERM is remembered rather than turned into a traceback, to be
delivered by the command once it can act on it (`interruption`). Either
way the command ends with `topos: interrupted` and exit status 130.

A third is a head start: `topos grade` starts its report's drawing child here
(`ReportChild.start_early`), so that the child loads while this process does.

A fourth is how it ends: once the command is done, the process leaves at once
(`_leave`) rather than tearing the interpreter down, which with matplotlib loaded takes
half a second during which Python has put the default handlers back, so a SIGTERM then
killed the process (status -15) instead of ending it with 130.
"""

from __future__ import annotations

import atexit
import contextlib
import sys

from topos_cli.shared.errors import ExitStatus
from topos_cli.shared.exit_without_teardown import exit_without_teardown
from topos_cli.shared.interruption import defer_from_start, hold_until_exit, pending_signal
from topos_cli.shared.output_stream import guard_standard_streams


def main() -> None:
    """Entry point of the console script."""
    defer_from_start()
    guard_standard_streams()
    if sys.argv[1:2] == ["grade"] and not {"--help", "-h"} & set(sys.argv[2:]):
        # A grade's report is drawn by a child that loads matplotlib meanwhile; started
        # now, it loads on the core this process leaves idle while it starts up.
        from topos_cli.harness.report_child import ReportChild

        ReportChild.start_early()
    try:
        from topos_cli.app import main as run_command
    except KeyboardInterrupt:  # only if the deferral could not be installed
        sys.stderr.write("topos: interrupted\n")
        sys.exit(ExitStatus.INTERRUPTED)
    try:
        run_command()
        status: object = ExitStatus.OK
    except SystemExit as ending:
        status = ending.code
    _leave(status)


def _leave(code: object) -> None:
    """Ends the process with the command's exit status `code` (as `sys.exit` takes it),
    once the exit functions have run (a report child no grade took is ended), without the
    interpreter's teardown; a signal that arrives meanwhile is remembered, and ends it
    with 130 as one during the command would."""
    hold_until_exit()
    if code is None:
        status = ExitStatus.OK
    elif isinstance(code, int):
        status = code
    else:  # `sys.exit("message")`: the message on stderr, status 1
        sys.stderr.write(f"{code}\n")
        status = 1
    with contextlib.suppress(BaseException):  # what an exit function raises ends nothing
        atexit._run_exitfuncs()
    if pending_signal() is not None and status != ExitStatus.INTERRUPTED:
        sys.stderr.write("topos: interrupted\n")
        status = ExitStatus.INTERRUPTED
    exit_without_teardown(status)


if __name__ == "__main__":
    main()
