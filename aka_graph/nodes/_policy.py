"""The production policy review of one candidate kernel, shared by every node that can make an incumbent:
V1 (before it is pinned) and `policy_review` (each passing trial that can be picked, best first).

The review is first the framework-purity check (`frameworks.framework_purity`: a "CUDA" candidate whose
main work is an ATen op fails without an agent), then an agent reading the diff against the incumbent;
its first line must be `POLICY: PASS`.
Each verdict is kept in the ledger per (episode, trial) with the kernel's sha256, so a re-run node reuses
it instead of asking again.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.frameworks import candidate_files, framework_purity, purity_reason
from aka_graph.nodes._common import budget_left, isolated, ledger_of, run_agent
from aka_graph.nodes.prompts import policy_prompt
from aka_graph.state import CampaignState
from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.workspace import CampaignWorkspace


@dataclass(frozen=True)
class PolicyOutcome:
    ok: bool
    reason: str
    tokens: int = 0
    sessions: int = 0


def kernel_patch(incumbent_dir: Path, candidate_dir: Path, framework: str = "pytorch") -> str:
    """The diff the reviewer reads: every candidate file of either side (`frameworks.candidate_files` of
    the candidate's framework and the incumbent's kernel.py/solution.json: V1 of a CUDA campaign replaces
    a Python reference with kernel.cu), a file absent on one side diffed against nothing. A command task's
    frozen versions hold its editable files at their tree paths instead: all of them are diffed."""
    names = dict.fromkeys((*candidate_files("pytorch"), *candidate_files(framework)))
    sides = [d for d in (incumbent_dir, candidate_dir) if d.is_dir()]
    if not any((d / n).is_file() for d in sides for n in names):  # a command task: its editable files
        names = dict.fromkeys(sorted({p.relative_to(d).as_posix() for d in sides for p in d.rglob("*")
                                      if p.is_file()}))
    parts = []
    for name in names:
        old = _lines(incumbent_dir / name)
        new = _lines(candidate_dir / name)
        parts.append("".join(difflib.unified_diff(old, new, f"incumbent/{name}", f"candidate/{name}")))
    return "".join(parts)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True) if path.is_file() else []


def policy_verdict(text: str) -> tuple[bool, str]:
    first = (text.strip().splitlines() or [""])[0].strip()
    if first == "POLICY: PASS":
        return True, "policy review passed"
    if first.startswith("POLICY: FAIL"):
        return False, first.removeprefix("POLICY: FAIL").strip() or "policy review failed"
    return False, f"policy reviewer gave no verdict line (got {first[:80]!r})"


def trial_kind(trial: int) -> str:
    return f"policy_trial{trial}"


def review_candidate(
    ctx: CampaignContext,
    state: CampaignState,
    ws: CampaignWorkspace,
    *,
    incumbent_dir: Path,
    candidate_dir: Path,
    sha256: str | None,
    cwd: Path,
    episode: int,
    trial: int,
    label: int | str,
) -> PolicyOutcome:
    """The policy verdict on one candidate (recorded in the ledger; a recorded one is reused)."""
    ledger = ledger_of(ws)
    kind = trial_kind(trial)
    done = recorded_review(ledger, episode, trial, sha256)
    if done is not None:  # the node was interrupted after the review: its tokens were never counted
        return done
    framework = state.episode_framework  # V1 (episode 0): the campaign's framework
    impure = framework_purity(framework, candidate_dir)
    if impure:  # the static check first: a kernel that is not its framework's needs no agent to reject it
        reason = purity_reason(impure)[:1000]
        ledger.record_decision(episode=episode, kind=kind, decision="fail",
                               numbers={"tokens": 0, "sessions": 0}, candidate_sha256=sha256, message=reason)
        return PolicyOutcome(False, reason)
    run = AgentRun(
        role="policy_reviewer",
        prompt=policy_prompt(state, kernel_patch(incumbent_dir, candidate_dir, framework)),
        cwd=cwd,
        effort="medium",
        timeout_s=state.config.agent_timeout_s,
        transcript_dir=ws.layout.transcripts(label) / f"policy_t{trial}",
        labels={"episode": str(label), "trial": str(trial)},
    )

    def missing(result: AgentResult) -> str | None:
        if result.final_text.strip().startswith("POLICY:"):
            return None
        return "answer with a first line 'POLICY: PASS' or 'POLICY: FAIL <reason>'"

    results, tokens = run_agent(
        ctx,
        ctx.agent,
        isolated(state, run),
        ledger,
        episode=episode,
        trial=trial,
        missing=missing,
        max_resumes=1,
        budget_left=budget_left(state),
    )
    ok, reason = policy_verdict(results[-1].final_text if results else "")
    ledger.record_decision(
        episode=episode,
        kind=kind,
        decision="pass" if ok else "fail",
        numbers={"tokens": tokens, "sessions": len(results)},
        candidate_sha256=sha256,
        message=reason,
    )
    return PolicyOutcome(ok, reason, tokens, len(results))


def recorded_review(ledger: Ledger, episode: int, trial: int, sha256: str | None) -> PolicyOutcome | None:
    """The verdict (and what its session cost) already recorded for this kernel, if any."""
    for done in ledger.decisions(episode):
        if done.kind == trial_kind(trial) and sha256 and done.candidate_sha256 == sha256:
            tokens, sessions = int(done.numbers.get("tokens", 0)), int(done.numbers.get("sessions", 0))
            return PolicyOutcome(done.decision == "pass", done.message, tokens, sessions)
    return None
