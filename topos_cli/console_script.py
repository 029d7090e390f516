"""The `topos` console script: what runs before anything else is imported.

Two things must hold from the first instant, before the command-line
framework (typer, click, rich) takes its fraction of a second to import:
the standard streams cannot fail the command (`output_stream`), and Ctrl-C
or SIGTERM is remembered rather than turned into a traceback, to be
delivered by the command once it can act on it (`interruption`). Either
way the command ends with `topos: interrupted` and exit status 130.

A third is a head start: `topos grade` starts its report's drawing child here
(`ReportChild.start_early`), so that the child loads while this process does.
"""

from __future__ import annotations

import sys

from topos_cli.shared.errors import ExitStatus
from topos_cli.shared.interruption import defer_from_start
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
    run_command()


if __name__ == "__main__":
    main()
