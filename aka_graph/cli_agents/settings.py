"""Per-CLI session settings read from the environment, and the guard that keeps secrets out of argv.

`AKA_<CLI>_SESSION_SETTINGS` (CLI = CLAUDE, CODEX, QODER, PI), else `AKA_SESSION_SETTINGS`, holds one
JSON object (or `@/path/to/file.json`) with these optional keys:

- `model` — model name passed to the CLI (an `AgentRun.model` wins over it);
- `env` — extra environment variables for the CLI (API keys and base URLs go here, never in argv);
- `extra_args` — extra command-line arguments, appended before the prompt;
- `config` — Codex only: `-c key=value` overrides (values written as TOML);
- `settings` — Claude/Qoder only: an object passed as `--settings` JSON;
- `provider` — Pi only: the `--provider` name;
- `home` — directory that holds this CLI's private home (default `~/.cache/aka_graph/agent-homes`);
- `home_files` — files written into the private home before each run (relative path -> text or JSON
  object), e.g. Pi's `models.json` or Codex's `config.toml`;
- `link_user_auth` — link the user's login (e.g. `~/.codex/auth.json`) into the private home (default true).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

# a variable holds a secret when one of its _-separated words says so (ANTHROPIC_API_KEY, *_TOKEN, ...),
# not when a word merely contains it (GIT_AUTHOR_NAME, KEYBOARD_LAYOUT)
SECRET_NAME = re.compile(
    r"(?:^|_)(?:KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|PAT|CREDENTIALS?)(?:_|$)", re.IGNORECASE
)
SECRET_FLAGS = ("--api-key", "--apikey", "--token", "--auth-token", "--password")
MIN_SECRET_LEN = 8


class SessionSettings(BaseModel):
    """What a user or a test can set per CLI without touching code."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    env: dict[str, str] = {}
    extra_args: list[str] = []
    config: dict[str, Any] = {}
    settings: dict[str, Any] | None = None
    provider: str | None = None
    home: str | None = None
    home_files: dict[str, str | dict[str, Any] | list[Any]] = {}
    link_user_auth: bool = True


def load_settings(cli: str, environ: Mapping[str, str] | None = None) -> SessionSettings:
    """Settings for `cli` from `AKA_<CLI>_SESSION_SETTINGS` or `AKA_SESSION_SETTINGS` (empty when unset)."""
    environ = os.environ if environ is None else environ
    for var in (f"AKA_{cli.upper()}_SESSION_SETTINGS", "AKA_SESSION_SETTINGS"):
        raw = environ.get(var, "").strip()
        if not raw:
            continue
        if raw.startswith("@"):
            path = Path(raw[1:]).expanduser()
            try:
                raw = path.read_text()
            except OSError as exc:
                raise ValueError(f"{var} points to {path}, which cannot be read: {exc}") from exc
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{var} is not valid JSON ({exc}); expected e.g. "
                '{"model": "...", "env": {"NAME": "value"}, "extra_args": []}'
            ) from exc
        try:
            return SessionSettings.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"{var} has invalid settings: {exc}") from exc
    return SessionSettings()


def check_argv_has_no_secrets(argv: Sequence[str], env: Mapping[str, str]) -> None:
    """Refuse an argv that carries a secret: argv is visible to every user through /proc and ps."""
    for i, arg in enumerate(argv):
        flag = arg.split("=", 1)[0].lower()
        if flag in SECRET_FLAGS:
            raise ValueError(
                f"argument {arg.split('=', 1)[0]!r} would put a credential on the command line; "
                'pass it through the settings\' "env" instead'
            )
        if i == 0:
            continue
        for name, value in env.items():
            if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LEN and value in arg:
                raise ValueError(
                    f"the value of {name} appears in argument {i}; secrets go in the environment, "
                    "never in argv"
                )
