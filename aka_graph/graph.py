"""The campaign graph — wiring only (nodes in `aka_graph.nodes`, routing rules in `aka_graph.edges`).

`build_graph()` returns the uncompiled `StateGraph` (compile it with a checkpointer, or add it to a
parent graph as a subgraph); `graph` is compiled without a checkpointer for `langgraph dev`.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from aka_graph import edges
from aka_graph.context import CampaignContext
from aka_graph.nodes.abba import abba
from aka_graph.nodes.await_environment import await_environment
from aka_graph.nodes.baseline_v0 import baseline_v0
from aka_graph.nodes.evaluate import evaluate
from aka_graph.nodes.finish import finish
from aka_graph.nodes.framework_baseline_v1 import framework_baseline_v1
from aka_graph.nodes.implement import implement
from aka_graph.nodes.plan_episode import plan_episode
from aka_graph.nodes.policy_review import policy_review
from aka_graph.nodes.preprocess import preprocess
from aka_graph.nodes.promote import promote
from aka_graph.nodes.review import review
from aka_graph.state import CampaignInput, CampaignOutput, CampaignState, ReviewTask

# Never retry automatically: a failed agent run or evaluation is a result, and a repeated one costs budget.
NO_RETRY = RetryPolicy(max_attempts=1, retry_on=lambda _: False)


def build_graph() -> StateGraph:
    builder = StateGraph(
        CampaignState,
        context_schema=CampaignContext,
        input_schema=CampaignInput,
        output_schema=CampaignOutput,
    )
    for name, node in (
        ("preprocess", preprocess),
        ("baseline_v0", baseline_v0),
        ("framework_baseline_v1", framework_baseline_v1),
        ("plan_episode", plan_episode),
        ("implement", implement),
        ("evaluate", evaluate),
        ("policy_review", policy_review),
        ("abba", abba),
        ("promote", promote),
        ("finish", finish),
        ("await_environment", await_environment),
    ):
        builder.add_node(name, node, retry_policy=NO_RETRY)
    builder.add_node("review", review, input_schema=ReviewTask, retry_policy=NO_RETRY)

    builder.add_edge(START, "preprocess")
    builder.add_edge("preprocess", "baseline_v0")
    builder.add_conditional_edges(
        "baseline_v0",
        edges.route_after_baseline,
        ["await_environment", "review", "framework_baseline_v1", "plan_episode", "finish"],
    )
    builder.add_conditional_edges(
        "framework_baseline_v1", edges.route_after_v1, ["await_environment", "plan_episode", "finish"]
    )
    builder.add_conditional_edges("plan_episode", edges.route_after_plan, ["review", "implement", "promote"])
    builder.add_conditional_edges("review", edges.route_after_review, ["framework_baseline_v1", "implement"])
    builder.add_edge("implement", "evaluate")
    builder.add_conditional_edges(
        "evaluate",
        edges.route_after_evaluate,
        ["await_environment", "implement", "policy_review", "abba", "promote"],
    )
    builder.add_conditional_edges("policy_review", edges.route_after_policy, ["abba", "promote"])
    builder.add_conditional_edges("abba", edges.route_after_abba, ["await_environment", "promote"])
    builder.add_conditional_edges("promote", edges.route_after_promote, ["plan_episode", "finish"])
    builder.add_conditional_edges(
        "await_environment",
        edges.route_after_await,
        ["baseline_v0", "framework_baseline_v1", "evaluate", "abba"],
    )
    builder.add_edge("finish", END)
    return builder


graph = build_graph().compile()
