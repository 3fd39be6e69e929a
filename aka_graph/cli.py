"""`python -m aka_graph run|resume|status|stop|evaluate|sandbox|graph|report`.

This module only declares the Typer application; each subcommand lives in `aka_graph.commands.<name>`,
which exposes `register(app)`, so a newcomer finds a command's behaviour under its own name.
"""

from __future__ import annotations

import importlib

import typer

COMMANDS = ("run", "resume", "status", "stop", "evaluate", "profile", "sandbox", "graph", "report", "fleet")

app = typer.Typer(
    name="aka_graph",
    help="Unattended, budget-bounded GPU-kernel optimization campaigns with verdicts the agent cannot game.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_commands() -> None:
    for name in COMMANDS:
        module = importlib.import_module(f"aka_graph.commands.{name}")
        module.register(app)


_register_commands()


# click's UsageError (typer >= 0.20 vendors click, so it is reached through a public typer exception)
UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def main() -> None:
    """Run the CLI; a malformed command line is one line naming the problem (exit 2), not a framed box."""
    try:
        code = app(standalone_mode=False)
    except UsageError as e:
        ctx = getattr(e, "ctx", None)
        command = "python -m aka_graph" + (f" {ctx.info_name}" if ctx is not None and ctx.parent else "")
        typer.echo(f"error: {e.format_message()} (see `{command} --help`)", err=True)
        raise SystemExit(2) from None
    except typer.Abort:
        typer.echo("aborted", err=True)
        raise SystemExit(1) from None
    raise SystemExit(code if isinstance(code, int) else 0)
