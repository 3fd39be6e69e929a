"""`build_graph()` embeds in a larger agent system as a subgraph: the parent maps its state onto
`CampaignInput` and reads `CampaignOutput`; with no runtime context the campaign builds its own
dependencies (here: from AKA_GRAPH_CONTEXT_FACTORY), and the parent's checkpointer persists both."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).parent / "nodes"))
from campaign_fakes import write_fake_operator

from aka_graph.graph import build_graph
from aka_graph.state import CampaignConfig


class ParentState(BaseModel):
    op_dir: str
    workspace: str
    summary: str = ""
    campaign_result: dict[str, Any] | None = None


def test_campaign_runs_as_a_subgraph_of_a_parent_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKA_GRAPH_CONTEXT_FACTORY", "campaign_fakes:make_context")
    campaign = build_graph().compile()

    def optimise(state: ParentState) -> dict[str, Any]:
        config = CampaignConfig(
            op_dir=state.op_dir,
            agent_cli="fake",
            platform="cpu",
            workspace=state.workspace,
            max_iters=1,
            fast_episodes=1,
            fast_trials=2,
        )
        return {"campaign_result": campaign.invoke({"config": config})}

    def summarise(state: ParentState) -> dict[str, Any]:
        result = state.campaign_result or {}
        return {"summary": f"v{result['incumbent'].version} after {result['stop_reason']}"}

    parent = StateGraph(ParentState)
    parent.add_node("optimise", optimise)
    parent.add_node("summarise", summarise)
    parent.add_edge(START, "optimise")
    parent.add_edge("optimise", "summarise")
    parent.add_edge("summarise", END)
    app = parent.compile(checkpointer=InMemorySaver())
    op = write_fake_operator(tmp_path / "op")
    out = app.invoke(
        {"op_dir": str(op), "workspace": str(tmp_path / "ws")}, {"configurable": {"thread_id": "p"}}
    )
    assert out["summary"] == "v1 after max-iters"
    assert set(out["campaign_result"]) <= {
        "workspace_root",
        "incumbent",
        "last_decision",
        "stop_reason",
        "failed",
        "next_version",
        "report_path",
        "submission_path",
    }


def test_campaign_graph_added_directly_as_a_node_shares_the_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKA_GRAPH_CONTEXT_FACTORY", "campaign_fakes:make_context")

    class Outer(BaseModel):
        config: CampaignConfig
        stop_reason: str | None = None
        workspace_root: str = ""

    outer = StateGraph(Outer)
    outer.add_node("campaign", build_graph().compile())
    outer.add_edge(START, "campaign")
    outer.add_edge("campaign", END)
    app = outer.compile(checkpointer=InMemorySaver())
    op = write_fake_operator(tmp_path / "op")
    config = CampaignConfig(
        op_dir=str(op),
        agent_cli="fake",
        platform="cpu",
        workspace=str(tmp_path / "ws"),
        max_iters=1,
        fast_episodes=1,
        fast_trials=1,
    )
    out = app.invoke({"config": config}, {"configurable": {"thread_id": "outer"}})
    assert out["stop_reason"] == "max-iters"
    assert Path(out["workspace_root"], "memory", "v1.json").is_file()
