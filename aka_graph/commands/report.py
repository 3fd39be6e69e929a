"""`python -m aka_graph report`: (re)write a campaign's final report from its records and ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        campaign_dir: Annotated[Path, typer.Argument(help="The campaign directory kernel_opt_<op>_...")],
    ) -> None:
        """Write report/ (Markdown + plot of the objective per version and the utilization reached)."""
        from aka_graph.tools.records.layout import CampaignLayout
        from aka_graph.tools.records.ledger import Ledger
        from aka_graph.tools.records.memory import read_version_records
        from aka_graph.tools.records.report import write_final_report
        from aka_graph.tools.records.workspace import MARKER

        root = campaign_dir.resolve()
        if not (root / MARKER).is_file():
            typer.echo(
                f"error: {root} is not a campaign directory (no {MARKER}); pass kernel_opt_<op>_...", err=True
            )
            raise typer.Exit(2)
        path = write_final_report(
            root, read_version_records(root), Ledger(CampaignLayout(root).ledger)
        )
        typer.echo(str(path))
