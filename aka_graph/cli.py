"""`python -m aka_graph run|resume|status|stop|evaluate|sandbox|graph|report`.

This module only declares the Typer application; each subcommand lives in `aka_graph.commands.<name>`,
which exposes `register(app)`, so a newcomer finds a command's behaviour under its own name.
"""

from __future__ import annotations

import importlib

import typer

COMMANDS = ("run", "resume", "status", "stop", "evaluate", "sandbox", "graph", "report")

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


def main() -> None:
    app()
