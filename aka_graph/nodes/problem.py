"""Production mode, native operator without `agent_problem.json`: a clean agent session derives the public
problem from the private shapes — in a scratch directory outside the campaign repository (confined to it),
so the exact shapes never enter the workspace. The result must be `atrex.agent_problem.v1` JSON naming no
private id and no distinctive private shape value. The scratch copy of the private files is deleted as
soon as the session ends; the derived problem and the session's transcript (it read the private shapes)
are kept in the campaign's private directory beside the checkpoints."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from aka_graph.cli_agents.base import AgentResult, AgentRun
from aka_graph.context import CampaignContext
from aka_graph.nodes._common import ledger_of, run_agent
from aka_graph.nodes.privacy_guard import privacy_of
from aka_graph.state import CampaignConfig
from aka_graph.tools.records.privacy import LeakScanner, private_dir
from aka_graph.tools.records.workspace import CampaignWorkspace

SCHEMA = "atrex.agent_problem.v1"
PROMPT = (
    "Derive the PUBLIC optimization problem of this operator for a coding agent that must never see the "
    "exact benchmark shapes. Read reference.py, input.py and shapes.json (private). Write "
    f'agent_problem.json with "schema": "{SCHEMA}", objective, evaluation {{"exact_cases": "private", '
    '"development_cases_are_evaluation_cases": false}, operator_contract, shape_domain (ranges, not the '
    "exact shapes), invariants, coverage_regimes and a few development_cases that are NOT in shapes.json. "
    "Do not copy any shape id or exact shape."
)


class ProblemDerivationError(RuntimeError):
    """The derived public problem is unusable; the message says why and how to supply one instead."""


def problem_issue(path: Path, private_ids: list[str], scanner: LeakScanner | None = None) -> str | None:
    """What is wrong with a derived agent_problem.json, or None if it is acceptable."""
    if not path.is_file():
        return "write agent_problem.json"
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        return f"agent_problem.json is not valid JSON ({e}); rewrite it"
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return f'agent_problem.json must be an object with "schema": "{SCHEMA}"'
    leaked = [i for i in private_ids if i in path.read_text()]
    if leaked:
        return f"agent_problem.json names private shape ids {leaked[:3]}: remove every private id"
    if scanner is not None and scanner.scan(path.read_text(), "agent_problem.json"):
        return (
            "agent_problem.json states exact sizes of private shapes: give ranges, and development cases "
            "that are not in shapes.json"
        )
    return None


def derive_public_problem(
    ctx: CampaignContext, config: CampaignConfig, ws: CampaignWorkspace, op_dir: Path
) -> tuple[Path, int, int]:
    """(path of the derived agent_problem.json, tokens, sessions); reuses a finished derivation."""
    keep = private_dir(Path(config.workspace), ws.root.name)
    derived, marker = keep / "agent_problem.json", keep / "derived.json"
    private_ids = (
        list(json.loads((op_dir / "shapes.json").read_text())) if (op_dir / "shapes.json").is_file() else []
    )
    privacy = privacy_of(config, ws.root, op_dir)
    scanner = privacy.scanner if privacy is not None else None
    if marker.is_file() and problem_issue(derived, private_ids, scanner) is None:
        done = json.loads(marker.read_text())
        return derived, int(done["tokens"]), int(done["sessions"])
    scratch = Path(config.workspace).resolve() / "checkpoints" / f"{ws.root.name}.problem"
    try:
        scratch.mkdir(parents=True, exist_ok=True)
        for name in ("reference.py", "input.py", "shapes.json"):
            if (op_dir / name).is_file():
                shutil.copyfile(op_dir / name, scratch / name)
        run = AgentRun(
            role="problem_deriver",
            prompt=PROMPT,
            cwd=scratch,
            effort=config.agent_effort,
            timeout_s=config.agent_timeout_s,
            transcript_dir=keep / "transcripts" / "problem",  # it read the private shapes
            labels={"episode": "problem"},
        )
        if privacy is not None:
            run = privacy.isolate(run)

        def missing(_: AgentResult) -> str | None:
            return problem_issue(scratch / "agent_problem.json", private_ids, scanner)

        results, tokens = run_agent(
            ctx,
            ctx.agent,
            run,
            ledger_of(ws),
            episode=None,
            trial=None,
            missing=missing,
            max_resumes=config.handoff_resumes,
            budget_left=config.token_budget,
        )
        issue = problem_issue(scratch / "agent_problem.json", private_ids, scanner)
        if issue is not None:
            raise ProblemDerivationError(
                f"the problem_deriver session did not produce a usable public problem ({issue}); supply "
                f"{op_dir / 'agent_problem.json'} yourself or run in leaderboard mode"
            )
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(scratch / "agent_problem.json", derived)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the copy of the private shapes goes at once
    marker.write_text(json.dumps({"tokens": tokens, "sessions": len(results)}))
    return derived, tokens, len(results)
