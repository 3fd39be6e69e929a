"""framework_baseline_v1: a first framework-native kernel (production `auto`, or `--v1 always`). An agent
writes it in episode 0's worktree; the campaign evaluates it on every workload with all seeds and pins it
as V1 when correct (V1 may be slower than the PyTorch reference: it is the framework's starting point)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.frameworks import entry_file, framework_purity, purity_reason
from aka_graph.nodes._common import (
    budget_left,
    copy_reviews,
    ctx_of,
    emit,
    evaluate_with_settings,
    freeze_kernel,
    incumbent_from_record,
    isolated,
    kernel_overrides,
    ledger_of,
    run_agent,
    save_result,
    update_live,
    workspace_of,
)
from aka_graph.nodes._policy import PolicyOutcome, recorded_review, review_candidate
from aka_graph.nodes.prompts import smoke_shapes, v1_prompt
from aka_graph.state import CampaignState
from aka_graph.tools.records.memory import (
    QualityGate,
    VersionRecord,
    read_version_records,
    version_path,
    write_version_record,
)
from aka_graph.tools.records.workspace import digest_changes

V1_EPISODE = 0


def v0_latencies(ws_root: Path) -> dict[str, float]:
    records = [r for r in read_version_records(ws_root) if r.version == 0]
    return {p.id: p.latency_us for p in records[0].performance if p.latency_us} if records else {}


def v1_record_message(record: VersionRecord) -> str:
    """The commit message of V1's record, from the record alone (a resumed run commits it too)."""
    return f"V1 record: {record.decision}"


def framework_baseline_v1(state: CampaignState, runtime: Runtime[CampaignContext]) -> dict[str, Any]:
    ctx = ctx_of(runtime, state)
    config = state.config
    ws = workspace_of(ctx, state)
    ledger = ledger_of(ws)
    version = state.next_version
    framework = config.framework
    entry = entry_file(framework)  # kernel.py, or kernel.cu for CUDA (frameworks.py)
    kernel_dir, marker = ws.layout.v1_kernel, ws.layout.v1_agent_done
    # tokens of a finished agent turn are in the state only if this node already returned (blocked) once
    counted = state.blocked is not None and state.blocked.node == "framework_baseline_v1"
    if version_path(ws.root, version).is_file():  # crashed after recording: read back, count the turn once
        record = next(r for r in read_version_records(ws.root) if r.version == version)
        # a kill may have come between writing the record and committing it
        ws.commit([f"memory/v{version}.json"], v1_record_message(record))
        done = json.loads(marker.read_text()) if marker.is_file() and not counted else {}
        # V1's policy review ran after any blocked return, in the interrupted run: never counted yet
        review = recorded_review(ledger, V1_EPISODE, 1, record.kernel_sha256)
        if review is not None:
            done = {
                "tokens": done.get("tokens", 0) + review.tokens,
                "sessions": done.get("sessions", 0) + review.sessions,
            }
        incumbent = state.incumbent
        if record.decision == "pinned":
            incumbent = incumbent_from_record(record, ws.layout.frozen_version(version))
        return {
            "tokens_spent": done.get("tokens", 0),
            "agent_sessions": done.get("sessions", 0),
            "incumbent": incumbent,
            "next_version": version + 1,
            "blocked": None,
        }
    tokens = sessions = 0
    forbidden: list[str] = []
    if not marker.is_file():  # the agent turn (skipped when only the evaluation is being retried)
        worktree = ws.create_episode(V1_EPISODE)
        copy_reviews(state, worktree)  # the reviewers' correctness guidance (episode 0)
        update_live(ws, state, "framework_baseline_v1", f"agent writing the {config.framework} V1")
        before = ws.protected_digest(worktree)
        run = AgentRun(
            role="implementer",
            prompt=v1_prompt(state, smoke_shapes(v0_latencies(ws.root))),
            cwd=worktree,
            effort=config.agent_effort,
            timeout_s=config.agent_timeout_s,
            transcript_dir=ws.layout.transcripts("v1"),
            labels={"episode": "v1", "trial": "1", "framework": config.framework},
        )
        run = isolated(state, run)

        def missing(_: AgentResult) -> str | None:
            return None if (worktree / entry).is_file() else f"{entry} is missing: write the kernel there"

        results, tokens = run_agent(
            ctx,
            ctx.agent,
            run,
            ledger,
            episode=V1_EPISODE,
            trial=1,
            missing=missing,
            max_resumes=config.handoff_resumes,
            budget_left=budget_left(state),
        )
        sessions = len(results)
        forbidden = sorted(
            set(digest_changes(before, ws.protected_digest(worktree)))
            | set(ws.candidate_diff(V1_EPISODE).forbidden)
        )
        freeze_kernel(worktree, kernel_dir, framework)
        marker.write_text(json.dumps({"tokens": tokens, "sessions": sessions, "forbidden": forbidden}))
    elif not counted:  # crash after the agent turn: its tokens were never added to the state
        done = json.loads(marker.read_text())
        tokens, sessions, forbidden = done["tokens"], done["sessions"], done["forbidden"]
    else:
        forbidden = json.loads(marker.read_text())["forbidden"]
    spent = {"tokens_spent": tokens, "agent_sessions": sessions}
    impure = [] if forbidden else framework_purity(framework, kernel_dir)
    if impure:  # every mode: a V1 that is not a kernel of its framework is never evaluated nor pinned
        record = VersionRecord(
            version=version,
            kind="v1",
            decision="policy_rejected",
            framework=framework,
            reason=purity_reason(impure)[:1000],
            quality_gate=QualityGate(passed=False, checks={"framework_purity": False}),
        )
    elif forbidden:
        record = VersionRecord(
            version=version,
            kind="v1",
            decision="forbidden_edit",
            framework=config.framework,
            reason=f"V1 edited protected files: {forbidden}",
        )
    else:
        node = "framework_baseline_v1"
        result, block = evaluate_with_settings(ctx, state, node, kernel_dir, ws.layout.v1_evaluation)
        if block is not None:
            return {**spent, "blocked": block}
        path = save_result(result, ws.layout.result_in(ws.layout.v1_evaluation))
        ledger.record(
            result,
            episode=V1_EPISODE,
            trial=1,
            role="v1",
            kernel_path=kernel_dir / entry,
            result_path=path,
        )
        commit = None
        policy: PolicyOutcome | None = None
        if result.status == "PASS" and config.optimization_mode == "production":
            policy = review_candidate(  # V1 becomes the incumbent: it is reviewed like every candidate
                ctx,
                state,
                ws,
                incumbent_dir=ws.layout.frozen_version(0),
                candidate_dir=kernel_dir,
                sha256=result.kernel_sha256,
                cwd=kernel_dir,
                episode=V1_EPISODE,
                trial=1,
                label="v1",
            )
            spent = {
                "tokens_spent": tokens + policy.tokens,
                "agent_sessions": sessions + policy.sessions,
            }
            ledger.record_decision(
                episode=V1_EPISODE,
                kind="policy",
                decision="pass" if policy.ok else "fail",
                candidate_sha256=result.kernel_sha256,
                message=policy.reason,
            )
        if result.status == "PASS" and (policy is None or policy.ok):
            commit = ws.squash_promote(
                V1_EPISODE,
                f"V1: first {config.framework} kernel",
                overrides=kernel_overrides(ws.editable_files, kernel_dir, framework),
            )
            freeze_kernel(kernel_dir, ws.layout.frozen_version(version), framework)
        record = VersionRecord.from_evaluation(
            version,
            "v1",
            result,
            decision="pinned" if commit else ("policy_rejected" if policy else "incorrect"),
            commit=commit,
            framework=config.framework,
            reason="first framework-native kernel"
            if commit
            else (policy.reason if policy else result.message),
            quality_gate=QualityGate(
                passed=policy is None or policy.ok,
                checks={"policy_review": policy.ok} if policy is not None else {},
            ),
        )
    write_version_record(ws.root, version, record)
    ws.commit([f"memory/v{version}.json"], v1_record_message(record))
    emit(
        runtime,
        ctx,
        "framework_baseline_v1",
        "recorded",
        decision=record.decision,
        objective=record.objective,
    )
    incumbent = state.incumbent
    if record.decision == "pinned":
        incumbent = incumbent_from_record(record, ws.layout.frozen_version(version))
    return {**spent, "incumbent": incumbent, "next_version": version + 1, "blocked": None}
