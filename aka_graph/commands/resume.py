"""`python -m aka_graph resume`: continue a stopped or killed campaign with the settings it started with."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("resume")
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
        from aka_graph.commands.run import print_outcome, user_errors
        from aka_graph.progress import Progress
        from aka_graph.runner import resume_campaign

        try:
            outcome = resume_campaign(workspace.resolve(), campaign, progress=Progress.for_terminal(quiet))
        except user_errors() as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from e
        print_outcome(outcome.values, outcome.status)
        if outcome.status == "stopped":
            raise typer.Exit(3)
