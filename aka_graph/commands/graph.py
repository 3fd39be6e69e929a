"""`python -m aka_graph graph`: the campaign graph as Mermaid (offline; paste into any Mermaid viewer)."""

from __future__ import annotations

import typer


def mermaid() -> str:
    from aka_graph.graph import graph

    return graph.get_graph(xray=1).draw_mermaid()


def register(app: typer.Typer) -> None:
    @app.command("graph")
    def show_graph() -> None:
        """Print the campaign graph (nodes, routing edges, the review fan-out) in Mermaid syntax."""
        typer.echo(mermaid())
