"""preprocess: resolve the campaign's target (once: the runner usually has already), create or reopen the
workspace, install the operator's public files, and record the target in the state for every later node.

An unknown platform or an unsupported framework is an error naming the choices — never a silent default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.context import CampaignContext
from aka_graph.nodes._common import ctx_of, emit, update_live
from aka_graph.state import CampaignState
from aka_graph.tools.records.workspace import CampaignWorkspace


def preprocess(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    target = ctx.target_for(config)
    op_dir = Path(target.op_dir)
    ws = CampaignWorkspace.open_or_create(
        Path(config.workspace), target.op_name, target.framework, target.platform, target.production
    )
    tokens = sessions = 0
    if target.op_format == "command":  # a kernel inside a source tree: the tree, seeded once
        from aka_graph.tasks.campaign import install_task
        from aka_graph.tasks.loader import load_task

        install_task(ws, load_task(op_dir))
    elif "agent_problem.json" in ws.install_operator(op_dir, target.production).missing:
        # production, native, no public problem supplied
        from aka_graph.nodes.problem import derive_public_problem

        problem, tokens, sessions = derive_public_problem(ctx, config, ws, op_dir)
        ws.install_operator(op_dir, target.production, agent_problem=problem)
    if ctx.skills_dir is not None:
        from aka_graph.cli_agents.assets import install_workspace_assets

        install_workspace_assets(ws.root, ctx.skills_dir)
    update = {"target": target, "workspace_root": str(ws.root), "episode_framework": target.framework}
    update_live(ws, state.model_copy(update=update), "preprocess", f"campaign {ws.root.name} ready")
    emit(
        runtime,
        ctx,
        "preprocess",
        "ready",
        workspace=str(ws.root),
        platform=target.platform,
        arch=target.arch,
    )
    return {**update, "tokens_spent": tokens, "agent_sessions": sessions}
