"""Qoder CLI as a backend: `qodercli --print --output-format stream-json` (Claude's stream format).

Every invocation is a fresh session (`--session-id NEW --no-session-persistence`); Qoder has no resume
here, so handoff recovery restates the context in a new session instead. Tokens come from the final
`result` event, as for Claude.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from aka_graph.cli_agents.base import AgentRun
from aka_graph.cli_agents.claude_stream import ClaudeStreamParser
from aka_graph.cli_agents.cli_backend import CliBackend
from aka_graph.cli_agents.home import HomeLayout, keep_user_python

TOKEN_VARS = ("QODER_PERSONAL_ACCESS_TOKEN", "QODER_PAT")
NOT_CREDENTIALS = {"machine_id", ".credential-transaction"}


class QoderBackend(CliBackend):
    """Qoder CLI (`@qoder-ai/qodercli`)."""

    name = "qoder"
    settings_key = "QODER"
    executables = ("qodercli",)
    supports_resume = False
    layout = HomeLayout(
        links=((".qoder/.auth", ".qoder/.auth"), (".gitconfig", ".gitconfig")),
        copies=((".qoder.json", ".qoder.json"),),
    )

    def build_argv(self, run: AgentRun, exe: Path, prompt: str, home: Path) -> tuple[list[str], str | None]:
        session = str(uuid.uuid4())
        argv = [
            str(exe),
            "--print",
            "--output-format",
            "stream-json",
            "--session-id",
            session,
            "--no-session-persistence",
            "--reasoning-effort",
            self.effort_flag(run.effort),
            "--dangerously-skip-permissions",
        ]
        model = run.model or self.settings.model
        if model:
            argv += ["--model", model]
        if self.settings.settings is not None:
            argv += ["--settings", json.dumps(self.settings.settings)]
        return [*argv, *self.settings.extra_args, "--", prompt], session

    def cli_env(self, home: Path) -> dict[str, str]:
        return keep_user_python({"HOME": str(home)})

    def make_parser(self, run: AgentRun, home: Path) -> ClaudeStreamParser:
        return ClaudeStreamParser()

    def login_problem(self, env: dict[str, str]) -> str | None:
        if any(env.get(v) for v in TOKEN_VARS):
            return None
        auth = Path(env.get("HOME") or Path.home()) / ".qoder" / ".auth"
        if auth.is_dir() and any(p.name not in NOT_CREDENTIALS for p in auth.iterdir()):
            return None
        return (
            "Qoder CLI is not logged in: run `qodercli login`, or put QODER_PERSONAL_ACCESS_TOKEN in the "
            '"env" of AKA_QODER_SESSION_SETTINGS'
        )
