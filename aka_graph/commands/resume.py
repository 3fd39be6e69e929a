"""`python -m aka_graph resume`: continue a stopped or killed campaign with the settings it started with."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aka_graph.commands.run import EXIT_CODES


def register(app: typer.Typer) -> None:
    @app.command("resume", epilog=EXIT_CODES)
    def resume(
        workspace: Annotated[
            Path, typer.Option(help="The --workspace the campaign was started with.")
        ] = Path("."),
        campaign: Annotated[
            str | None,
            typer.Option(help="Campaign name (kernel_opt_...), needed when the workspace holds several."),
        ] = None,
        quiet: Annotated[bool, typer.Option(help="No progress output.")] = False,
    ) -> None:
        """Resume a campaign from its SQLite checkpoint (the node that was interrupted runs again)."""
        from aka_graph.commands.run import fail, print_outcome, user_errors
        from aka_graph.progress import Progress
        from aka_graph.runner import checkpoint_path, list_threads, resume_campaign

        workspace = workspace.resolve()
        if not list_threads(workspace):
            raise fail(
                f"nothing to resume in {workspace}: it has no campaign checkpoint "
                f"({checkpoint_path(workspace)}); pass the --workspace the campaign was started with, "
                "or start one with `python -m aka_graph run`"
            )
        try:
            outcome = resume_campaign(workspace, campaign, progress=Progress.for_terminal(quiet))
        except user_errors() as e:
            raise fail(str(e)) from e
        print_outcome(outcome.values, outcome.status)
        if outcome.status == "stopped":
            raise typer.Exit(3)
