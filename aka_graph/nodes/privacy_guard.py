"""Production mode's privacy, as the nodes apply it: one object per campaign that masks the evaluator,
isolates every agent process, checks every commit for leaks, and remembers a leak once found.

A leak found after a commit raises `PrivacyViolation` at once (the node that committed is where the leak
happened) and is recorded in the campaign's private directory, so a resumed campaign fails again instead
of carrying on with a leaked history; the runner turns it into a failed campaign (report, no submission,
non-zero exit).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aka_graph.cli_agents.base import AgentRun
from aka_graph.state import CampaignConfig
from aka_graph.tools.records.privacy import (
    LeakScanner,
    OpaqueIds,
    PrivacyViolation,
    PrivateEvaluator,
    agent_sandbox,
    campaign_privacy,
    private_dir,
    public_operator_text,
)

VIOLATION_FILE = "violation.json"


@dataclass
class CampaignPrivacy:
    workspace: Path
    ws_root: Path
    op_dir: Path
    ids: OpaqueIds | None
    scanner: LeakScanner | None
    sandbox_mode: str = "auto"

    @property
    def violation_path(self) -> Path:
        return private_dir(self.workspace, self.ws_root.name) / VIOLATION_FILE

    def evaluator(self, inner: Any) -> Any:
        if self.ids is None:
            return inner
        return PrivateEvaluator(inner, self.ids, private_dir(self.workspace, self.ws_root.name))

    def isolate(self, run: AgentRun, writable: Path | None = None) -> AgentRun:
        """`run` with the campaign's agent sandbox (its cwd, or `writable`, the only campaign path)."""
        worktree = Path(writable or run.cwd)
        sandbox = agent_sandbox(self.workspace, self.ws_root, self.op_dir, worktree, self.sandbox_mode)
        return run.model_copy(update={"sandbox": sandbox})

    def findings(self, text: str, where: str) -> list[str]:
        return self.scanner.scan(text, where) if self.scanner is not None else []

    def after_commit(self, repo_dir: Path, sha: str) -> None:
        """The commit guard: a leak in what this commit introduced fails the campaign where it happens."""
        if self.scanner is None:
            return
        found = self.scanner.scan_commit(repo_dir, sha)
        if found:
            self.record_violation(found)

    def record_violation(self, findings: list[str]) -> None:
        path = self.violation_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"findings": findings}, indent=2) + "\n")
        raise PrivacyViolation(findings)

    def raise_if_violated(self) -> None:
        if self.violation_path.is_file():
            raise PrivacyViolation(json.loads(self.violation_path.read_text())["findings"])


_CACHE: dict[str, CampaignPrivacy] = {}
_LOCK = threading.Lock()


def privacy_of(config: CampaignConfig, ws_root: Path, op_dir: Path) -> CampaignPrivacy | None:
    """The campaign's privacy in production mode (None in leaderboard mode)."""
    if config.optimization_mode != "production":
        return None
    workspace = Path(config.workspace).resolve()
    # numbers the public operator files state are no leak: a changed op/ (the derived public problem
    # installed) makes a new scanner
    key = str(Path(ws_root).resolve()) + "\0" + public_operator_text(Path(ws_root))
    with _LOCK:
        if key not in _CACHE:
            found = campaign_privacy(workspace, Path(ws_root).name, op_dir)
            ids, scanner = found if found is not None else (None, None)
            mode = config.agent_isolation
            root = Path(ws_root).resolve()
            _CACHE[key] = CampaignPrivacy(workspace, root, Path(op_dir), ids, scanner, mode)
        return _CACHE[key]
