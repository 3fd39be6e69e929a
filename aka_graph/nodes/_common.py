"""Helpers every node shares: the runtime context, progress events, the workspace, the ledger, agent runs.

Nodes are written to be re-run: LangGraph (durability "sync") re-executes the node a `kill -9`
interrupted, so every side effect here is idempotent or keyed (ledger keys, `memory/vN.json` existence).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentBackend, AgentResult, AgentRun, BudgetExceeded, TokenUsage
from aka_graph.context import CampaignContext, context_for
from aka_graph.edges import budget_left as budget_left  # one definition (the routing's), re-exported
from aka_graph.frameworks import candidate_files
from aka_graph.nodes.eval_timeout import evaluation_timeout_s
from aka_graph.nodes.privacy_guard import CampaignPrivacy, privacy_of
from aka_graph.state import CampaignState, EnvironmentBlock, Incumbent
from aka_graph.target import CampaignTarget
from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import LiveRecord, VersionRecord, write_live
from aka_graph.tools.records.workspace import CampaignWorkspace


def ctx_of(runtime: Runtime[CampaignContext] | None, state: CampaignState) -> CampaignContext:
    return context_for(runtime.context if runtime is not None else None, state.config)


def emit(
    runtime: Runtime[CampaignContext] | None, ctx: CampaignContext, node: str, event: str, **fields: Any
) -> None:
    """A progress event: to the `custom` stream (progress display) and to the context's observer."""
    payload = {"node": node, "event": event, **fields}
    if runtime is not None:
        runtime.stream_writer(payload)
    if ctx.on_event is not None:
        ctx.on_event(payload)


def workspace_of(ctx: CampaignContext, state: CampaignState) -> CampaignWorkspace:
    """The campaign's workspace (preprocess created it; every later node reuses the context's handle).

    In production mode every commit made through it is checked for private shapes where it happens,
    and a campaign that leaked once fails again on every later step (see `privacy_guard`)."""
    ws = ctx.workspace(state.workspace_root)
    if state.target is not None and state.target.op_format == "command":  # also when resumed: the task's
        from aka_graph.tasks.campaign import configure_workspace  # editable files, not the framework's

        configure_workspace(ws, state.target)
    privacy = privacy_of_state(state)
    if privacy is not None:
        privacy.raise_if_violated()
        ws.on_commit = privacy.after_commit
    return ws


def privacy_of_state(state: CampaignState) -> CampaignPrivacy | None:
    """The campaign's privacy guard in production mode (None in leaderboard mode or before preprocess)."""
    if state.target is None or not state.workspace_root:
        return None
    return privacy_of(state.config, Path(state.workspace_root), Path(state.target.op_dir))


def isolated(state: CampaignState, run: AgentRun, writable: Path | None = None) -> AgentRun:
    """`run` confined to its working directory in production mode (unchanged otherwise)."""
    privacy = privacy_of_state(state)
    return privacy.isolate(run, writable) if privacy is not None else run


def evaluator_of(ctx: CampaignContext, state: CampaignState) -> Any:
    """The evaluator as this campaign may use it: masked in production mode with private shapes."""
    privacy = privacy_of_state(state)
    return privacy.evaluator(ctx.evaluator) if privacy is not None else ctx.evaluator


def target_of(state: CampaignState) -> CampaignTarget:
    """The identity preprocess resolved (nodes after preprocess only)."""
    if state.target is None:
        raise RuntimeError("the campaign target is not resolved: preprocess must run first")
    return state.target


def ledger_of(ws: CampaignWorkspace) -> Ledger:
    return Ledger(ws.ledger_path)


def update_live(
    ws: CampaignWorkspace, state: CampaignState, node: str, message: str = "", **fields: Any
) -> None:
    inc = state.incumbent
    best = state.candidate.objective if state.candidate else None
    values: dict[str, Any] = dict(
        episode=state.episode or None,
        mode=state.episode_kind if state.episode else None,
        node=node,
        trial=state.trial or None,
        incumbent_version=inc.version if inc else None,
        incumbent_objective=inc.objective if inc else None,
        best_trial_objective=best,
        tokens_spent=state.tokens_spent,
        message=message,
    )
    values.update(fields)
    write_live(ws.root, LiveRecord(**values))


def save_result(result: EvaluationResult, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.model_dump_json(by_alias=True, indent=2) + "\n")
    return path


def save_json(data: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    return path


def freeze_kernel(src_dir: Path, dest: Path, framework: str = "pytorch") -> Path:
    """Copy a kernel directory's candidate files (`frameworks.candidate_files`: kernel.py, or kernel.cu,
    + solution.json) to a fixed place that nothing edits."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in candidate_files(framework):
        if (src_dir / name).is_file():
            shutil.copyfile(src_dir / name, dest / name)
        elif (dest / name).exists():
            (dest / name).unlink()
    return dest


def kernel_overrides(editable: list[str], kernel_dir: Path, framework: str) -> dict[str, Path]:
    """The workspace files a frozen candidate is squashed onto: its framework's candidate files that the
    workspace lets the agent edit (kernel.py; kernel.cu + solution.json for CUDA), by the frozen copy."""
    return {name: Path(kernel_dir) / name for name in candidate_files(framework) if name in editable}


def environment_block(state: CampaignState, node: str, diagnostic: str) -> EnvironmentBlock | None:
    """A block for `node`, or None once it has failed `max_environment_retries` times in a row."""
    previous = state.blocked.attempts if state.blocked and state.blocked.node == node else 0
    if previous >= state.config.max_environment_retries:
        return None
    return EnvironmentBlock(node=node, diagnostic=diagnostic[-2000:], attempts=previous + 1)


def evaluate_with_settings(
    ctx: CampaignContext, state: CampaignState, node: str, kernel_dir: Path, results_dir: Path
) -> tuple[EvaluationResult, EnvironmentBlock | None]:
    """One full evaluation with the campaign's settings, and the block that parks the campaign in
    await_environment when it was the environment's failure (within `max_environment_retries`)."""
    config = state.config
    op_dir = Path(target_of(state).op_dir)
    result = evaluator_of(ctx, state).evaluate(
        ctx.sandbox,
        op_dir,
        kernel_dir,
        results_dir,
        seeds=config.seeds,
        timeout_s=evaluation_timeout_s(config, op_dir),
        gpu_index=None,  # the context's sandbox holds the GPU (infrastructure: may change on a resume)
        device=config.device,
    )
    block = environment_block(state, node, result.message) if result.status == "INFRA_ERROR" else None
    return result, block


def run_agent(
    ctx: CampaignContext,
    backend: AgentBackend,
    run: AgentRun,
    ledger: Ledger,
    *,
    episode: int | None,
    trial: int | None,
    missing: Callable[[AgentResult], str | None],
    max_resumes: int,
    budget_left: int | None = None,
) -> tuple[list[AgentResult], int]:
    """Run one agent turn with handoff resumes; record every invocation's tokens -> (results, tokens).

    With a token budget, the CLI is stopped (`BudgetExceeded`) as soon as this turn alone would use up
    what is left of it; parallel review branches each see the same remainder (documented overshoot).
    """
    from aka_graph.cli_agents.handoff import run_with_handoff

    def guard(current: TokenUsage) -> None:
        if budget_left is not None and current.total > budget_left:
            raise BudgetExceeded(f"{current.total} tokens in this turn exceed the {budget_left} left")

    results = run_with_handoff(
        backend, run, missing, max_resumes=max_resumes, on_tokens=guard if budget_left is not None else None
    )
    total = TokenUsage()
    for attempt, result in enumerate(results):
        total = total + result.tokens
        ledger.record_agent_run(
            episode=episode,
            trial=trial,
            role=run.role,
            attempt=attempt,
            session_id=result.session_id,
            tokens=result.tokens,
        )
    return results, total.total


def incumbent_from_record(record: VersionRecord, kernel_dir: Path) -> Incumbent:
    """The incumbent a version record describes, its kernel frozen at `kernel_dir`."""
    return Incumbent(
        version=record.version,
        kernel_path=str(kernel_dir),
        sha256=record.kernel_sha256 or "",
        objective=record.objective,
        utilization_pct=record.utilization_pct,
        timing_method=record.timing_method or "none",
        commit=record.commit or "",
        framework=record.framework or "pytorch",
    )


def load_result(path: Path) -> EvaluationResult:
    return EvaluationResult.model_validate_json(Path(path).read_text())


def copy_reviews(state: CampaignState, worktree: Path) -> None:
    """Reviewer notes (kept outside the worktree) become plans/reviews/ for the implementer to read."""
    for note in state.reviews.values():
        src = Path(note.notes_path)
        if note.episode == state.episode and src.is_file():
            dest = worktree / "plans" / "reviews" / src.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
