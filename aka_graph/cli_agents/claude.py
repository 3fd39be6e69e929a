"""Claude Code as a backend: `claude --print --verbose --output-format stream-json`.

A new session gets `--session-id <fresh uuid>` (reusing one fails with "already in use"); later turns
use `--resume <id>`. Tokens come from the final `result` event. Runs in a private HOME, with the user's
login linked in, telemetry/updates/non-essential traffic off.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from aka_graph.cli_agents.base import AgentRun
from aka_graph.cli_agents.claude_stream import ClaudeStreamParser
from aka_graph.cli_agents.cli_backend import CliBackend
from aka_graph.cli_agents.home import HomeLayout, keep_user_python

OFFLINE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
CREDENTIAL_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)


class ClaudeBackend(CliBackend):
    """Claude Code (`@anthropic-ai/claude-code`)."""

    name = "claude"
    settings_key = "CLAUDE"
    executables = ("claude",)
    layout = HomeLayout(
        links=((".claude/.credentials.json", ".claude/.credentials.json"), (".gitconfig", ".gitconfig")),
        copies=((".claude.json", ".claude.json"),),
    )

    def build_argv(self, run: AgentRun, exe: Path, prompt: str, home: Path) -> tuple[list[str], str | None]:
        argv = [
            str(exe),
            "--print",
            "--verbose",
            "--output-format",
            "stream-json",
            "--dangerously-skip-permissions",
            "--effort",
            self.effort_flag(run.effort),
        ]
        model = run.model or self.settings.model
        if model:
            argv += ["--model", model]
        if self.settings.settings is not None:
            argv += ["--settings", json.dumps(self.settings.settings)]
        if run.resume_session:
            session: str | None = run.resume_session
            argv += ["--resume", run.resume_session]
        else:
            session = str(uuid.uuid4())
            argv += ["--session-id", session]
        return [*argv, *self.settings.extra_args, "--", prompt], session

    def cli_env(self, home: Path) -> dict[str, str]:
        env = keep_user_python({"HOME": str(home), **OFFLINE_ENV})
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # root may use --dangerously-skip-permissions only in a sandbox
        return env

    def make_parser(self, run: AgentRun, home: Path) -> ClaudeStreamParser:
        return ClaudeStreamParser()

    def login_problem(self, env: dict[str, str]) -> str | None:
        if any(env.get(v) for v in CREDENTIAL_VARS):
            return None
        if self.settings.settings and self.settings.settings.get("apiKeyHelper"):
            return None
        if (Path(env.get("HOME") or Path.home()) / ".claude" / ".credentials.json").is_file():
            return None
        return (
            "Claude Code is not logged in: run `claude setup-token` and export CLAUDE_CODE_OAUTH_TOKEN, "
            'or run `claude` once and `/login`, or put ANTHROPIC_API_KEY in the "env" of '
            "AKA_CLAUDE_SESSION_SETTINGS"
        )
