"""Codex as a backend: `codex exec --json --color never`, later turns `codex exec resume THREAD`.

The thread id (the session id) comes from `thread.started`; Codex cannot be given one. Its usage is
cumulative over the thread, so the last cumulative value of each thread is persisted in the private
`CODEX_HOME` (next to Codex's own session files, so it survives a coordinator restart) and a resumed
turn reports only the difference. Settings' `config` become `-c key=value` overrides.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, ClassVar

from aka_graph.cli_agents.base import AgentRun, Effort
from aka_graph.cli_agents.cli_backend import CliBackend
from aka_graph.cli_agents.codex_stream import CodexCumulative, CodexStreamParser
from aka_graph.cli_agents.home import HomeLayout, prepare_home
from aka_graph.cli_agents.stream_base import StreamParser

OFFLINE_CONFIG: dict[str, Any] = {
    "check_for_update_on_startup": False,
    "analytics.enabled": False,
    "features.plugins": False,
    "features.remote_plugin": False,
    "features.apps": False,
    "features.in_app_updates": False,
}
CREDENTIAL_VARS = ("OPENAI_API_KEY", "CODEX_API_KEY")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(value: Any) -> str:
    """A Python value as a TOML value (inline tables for dicts), for `-c key=value`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string uses the same escapes
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        parts = [f"{k if _BARE_KEY.match(k) else json.dumps(k)} = {toml_value(v)}" for k, v in value.items()]
        return "{" + ", ".join(parts) + "}"
    raise ValueError(f"cannot write {type(value).__name__} {value!r} as a TOML value")


class CodexUsageStore:
    """The last cumulative usage Codex reported per thread, one small JSON file per thread."""

    def __init__(self, home: Path) -> None:
        self.dir = home / "aka-thread-usage"

    def _path(self, thread_id: str) -> Path:
        return self.dir / (re.sub(r"[^A-Za-z0-9_.-]", "_", thread_id) + ".json")

    def load(self, thread_id: str) -> CodexCumulative | None:
        try:
            data = json.loads(self._path(thread_id).read_text())
            return CodexCumulative(**{k: int(data.get(k, 0)) for k in CodexCumulative().as_dict()})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, thread_id: str, cumulative: CodexCumulative) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self._path(thread_id)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cumulative.as_dict()))
        os.replace(tmp, path)


class CodexBackend(CliBackend):
    """OpenAI Codex CLI (`@openai/codex`)."""

    name = "codex"
    settings_key = "CODEX"
    executables = ("codex",)
    layout = HomeLayout(
        links=((".codex/auth.json", "auth.json"),), copies=((".codex/config.toml", "config.toml"),)
    )
    efforts: ClassVar[dict[Effort, str]] = {
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "xhigh",
        "max": "xhigh",
    }

    def build_argv(self, run: AgentRun, exe: Path, prompt: str, home: Path) -> tuple[list[str], str | None]:
        common = ["--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check"]
        config = {
            **OFFLINE_CONFIG,
            "model_reasoning_effort": self.effort_flag(run.effort),
            **self.settings.config,
        }
        for key, value in config.items():
            common += ["-c", f"{key}={toml_value(value)}"]
        model = run.model or self.settings.model
        if model:
            common += ["-m", model]
        common += self.settings.extra_args
        if run.resume_session:
            return [str(exe), "exec", "resume", *common, "--", run.resume_session, prompt], run.resume_session
        return [str(exe), "exec", "--color", "never", *common, "--", prompt], None

    def home(self) -> Path:
        user_codex_home = os.environ.get("CODEX_HOME")  # the user's own, when not ~/.codex
        if user_codex_home:
            auth = str(Path(user_codex_home).expanduser() / "auth.json")
            config = str(Path(user_codex_home).expanduser() / "config.toml")
            layout = HomeLayout(links=((auth, "auth.json"),), copies=((config, "config.toml"),))
            return prepare_home(self.name, self.settings, layout)
        return super().home()

    def cli_env(self, home: Path) -> dict[str, str]:
        return {"CODEX_HOME": str(home)}

    def make_parser(self, run: AgentRun, home: Path) -> CodexStreamParser:
        if run.resume_session is None:
            return CodexStreamParser(CodexCumulative())
        return CodexStreamParser(CodexUsageStore(home).load(run.resume_session))

    def after_run(self, run: AgentRun, parser: StreamParser, home: Path) -> None:
        assert isinstance(parser, CodexStreamParser)
        if parser.session_id and parser.cumulative is not None:
            CodexUsageStore(home).save(parser.session_id, parser.cumulative)

    def login_problem(self, env: dict[str, str]) -> str | None:
        if any(env.get(v) for v in CREDENTIAL_VARS) or "model_provider" in self.settings.config:
            return None
        user_codex = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
        if (user_codex / "auth.json").is_file():
            return None
        return (
            "Codex is not logged in: run `codex login` (or `printenv OPENAI_API_KEY | codex login "
            '--with-api-key`), or put OPENAI_API_KEY in the "env" of AKA_CODEX_SESSION_SETTINGS'
        )
