"""The command group `topos` is built on: typer's, with an interrupt inside a command made
one error of ours and no flag shown with a value placeholder in help."""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup


class CommandInterruptedError(Exception):
    """A command was interrupted by Ctrl-C or SIGTERM: `topos: interrupted`, exit 130.

    Not a `KeyboardInterrupt`, which the command-line framework would turn
    into a silent exit 130 before `main` could say anything.
    """


def without_flag_placeholders(command: Any, context: Any) -> None:
    """Gives every flag of `command` (and of its subcommands) an empty placeholder, so its
    help shows `--markdown`, not `--markdown <bool>`: a flag takes no value."""
    for parameter in command.get_params(context):
        if getattr(parameter, "is_flag", False) and parameter.metavar is None:
            parameter.metavar = ""
    if hasattr(command, "list_commands"):  # a group: its subcommands too
        for name in command.list_commands(context):
            subcommand = command.get_command(context, name)
            if subcommand is not None:
                without_flag_placeholders(subcommand, context)


class InterruptibleGroup(TyperGroup):
    """typer's command group; an interrupt inside a command becomes `CommandInterruptedError`;
    no flag shows a `<bool>` placeholder in help."""

    def get_params(self, ctx):  # click's own signature
        """The group's parameters, its flags without a placeholder."""
        parameters = super().get_params(ctx)
        for parameter in parameters:
            if getattr(parameter, "is_flag", False) and parameter.metavar is None:
                parameter.metavar = ""
        return parameters

    def get_command(self, ctx, cmd_name):  # click's own signature
        """The subcommand `cmd_name`, its flags without a placeholder."""
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            without_flag_placeholders(command, ctx)
        return command

    def invoke(self, ctx):  # click's own signature, of whichever click typer uses
        """Runs the command, turning an interrupt into `CommandInterruptedError`."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as error:
            raise CommandInterruptedError(getattr(error, "signal_name", "SIGINT")) from None
