"""What every CLI backend shares: settings, private home, locating the binary, running it under
`process.run_streaming`, live token observation (a `BudgetExceeded` from the observer stops the run)
and turning the parsed stream into an `AgentResult`.

A subclass only says how to build its argv and environment and which stream parser reads its output.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from aka_graph.cli_agents.base import (
    AgentNotReady,
    AgentResult,
    AgentRun,
    BudgetExceeded,
    Effort,
    TokenObserver,
)
from aka_graph.cli_agents.home import HomeLayout, prepare_home
from aka_graph.cli_agents.locate import INSTALL_COMMAND, find_executable
from aka_graph.cli_agents.process import ProcessOutcome, TranscriptPaths, run_streaming
from aka_graph.cli_agents.sandbox import sandboxed_argv
from aka_graph.cli_agents.settings import SessionSettings, check_argv_has_no_secrets, load_settings
from aka_graph.cli_agents.stream_base import StreamParser

MAX_PROMPT_ARG_BYTES = 100_000  # Linux caps one argv string at 128 KiB


class CliBackend:
    """Base of the claude, codex, qoder and pi backends (implements `AgentBackend`)."""

    name: str = ""
    settings_key: str = ""  # the <CLI> of AKA_<CLI>_SESSION_SETTINGS and AKA_<CLI>_BIN
    executables: tuple[str, ...] = ()
    layout: HomeLayout = HomeLayout()
    supports_resume: bool = True
    efforts: ClassVar[dict[Effort, str]] = {
        "low": "low",
        "medium": "medium",
        "high": "high",
        "xhigh": "xhigh",
        "max": "max",
    }

    def __init__(self, settings: SessionSettings | None = None, *, wrapper: Sequence[str] = ()) -> None:
        """`wrapper` prefixes argv (e.g. `nsenter --net=...` to run inside a network namespace)."""
        self.settings = settings if settings is not None else load_settings(self.settings_key)
        self.wrapper = list(wrapper)

    # --- what subclasses provide -------------------------------------------------------------------
    def build_argv(self, run: AgentRun, exe: Path, prompt: str, home: Path) -> tuple[list[str], str | None]:
        """argv (without wrapper) and the session id chosen up front (None when the CLI picks it)."""
        raise NotImplementedError

    def cli_env(self, home: Path) -> dict[str, str]:
        """Variables this CLI needs on top of the inherited environment (home, telemetry off, ...)."""
        raise NotImplementedError

    def make_parser(self, run: AgentRun, home: Path) -> StreamParser:
        raise NotImplementedError

    def login_problem(self, env: dict[str, str]) -> str | None:
        """None when a login/credential is visible, else the message with the command that fixes it."""
        return None

    def after_run(self, run: AgentRun, parser: StreamParser, home: Path) -> None:
        """Hook after a run (Codex persists its thread's cumulative usage)."""

    # --- shared machinery --------------------------------------------------------------------------
    def effort_flag(self, effort: Effort) -> str:
        return self.efforts[effort]

    def executable(self) -> Path:
        exe = find_executable(self.settings_key, self.executables)
        if exe is None:
            raise AgentNotReady(
                f"{self.name}: the `{self.executables[0]}` CLI was not found (checked "
                f"AKA_{self.settings_key}_BIN, PATH and the project-local npm prefix); "
                f"install it with `{INSTALL_COMMAND}`"
            )
        return exe

    def environment(self, home: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.cli_env(home))
        env.update(self.settings.env)
        return env

    def home(self) -> Path:
        return prepare_home(self.name, self.settings, self.layout)

    def check_ready(self) -> None:
        self.executable()
        env = dict(os.environ)
        env.update(self.settings.env)
        problem = self.login_problem(env)
        if problem:
            raise AgentNotReady(f"{self.name}: {problem}")

    def run(self, run: AgentRun, on_tokens: TokenObserver | None = None) -> AgentResult:
        if run.resume_session and not self.supports_resume:
            raise ValueError(
                f"{self.name} cannot resume a session; start a fresh one with the context restated"
            )
        exe = self.executable()
        home = self.home()
        env = self.environment(home)
        transcript = TranscriptPaths.allocate(run.transcript_dir, self.name, run.role)
        prompt = self._prompt_argument(run.prompt, transcript)
        argv, chosen_session = self.build_argv(run, exe, prompt, home)
        prompt_file = [] if prompt == run.prompt else [self._prompt_file(transcript)]
        argv = sandboxed_argv(
            run.sandbox, argv, cwd=run.cwd, environ=env, executable=exe, home=home, extra_readable=prompt_file
        )
        argv = [*self.wrapper, *argv]
        check_argv_has_no_secrets(argv, env)
        parser = self.make_parser(run, home)
        observer_error: list[BaseException] = []

        def on_line(line: str) -> str | None:
            if not parser.feed(line) or on_tokens is None:
                return None
            try:
                on_tokens(parser.tokens())
            except BudgetExceeded as exc:
                return f"stopped by the token budget: {exc}"
            except Exception as exc:  # an observer bug: stop the CLI, then re-raise it
                observer_error.append(exc)
                return f"token observer raised {exc!r}"
            return None

        outcome = run_streaming(
            argv, cwd=run.cwd, env=env, timeout_s=run.timeout_s, transcript=transcript, on_line=on_line
        )
        if observer_error:
            raise observer_error[0]
        self.after_run(run, parser, home)
        return self._result(run, parser, outcome, chosen_session)

    def _prompt_argument(self, prompt: str, transcript: TranscriptPaths) -> str:
        if len(prompt.encode()) <= MAX_PROMPT_ARG_BYTES:
            return prompt
        path = self._prompt_file(transcript)
        path.write_text(prompt)
        return f"Your full instructions are in the file {path}. Read all of it first, then follow it."

    @staticmethod
    def _prompt_file(transcript: TranscriptPaths) -> Path:
        return transcript.meta.with_name(transcript.meta.name.replace(".meta.json", ".prompt.md"))

    def _result(
        self, run: AgentRun, parser: StreamParser, outcome: ProcessOutcome, chosen_session: str | None
    ) -> AgentResult:
        tokens = parser.tokens()
        ended_early = outcome.timed_out or outcome.stop_reason is not None
        if ended_early and tokens.accuracy == "exact":
            tokens = tokens.model_copy(update={"accuracy": "partial"})
        failed = parser.failed or ended_early or outcome.exit_code != 0
        if outcome.timed_out:
            error = f"timed out after {run.timeout_s:g} s; the process group was killed"
        elif outcome.stop_reason:
            error = outcome.stop_reason
        elif parser.failed:
            error = parser.error or "the CLI reported an error"
        elif outcome.exit_code != 0:
            error = f"exit code {outcome.exit_code}: {_stderr_tail(outcome.transcript.stderr)}"
        else:
            error = ""
        return AgentResult(
            exit_code=outcome.exit_code,
            session_id=parser.session_id or chosen_session,
            tokens=tokens,
            transcript_path=outcome.transcript.stdout,
            final_text=parser.text(),
            timed_out=outcome.timed_out,
            failed=failed,
            error=error,
            stopped=outcome.stop_reason is not None,
        )


def _stderr_tail(path: Path, limit: int = 600) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    return text[-limit:] or "(no stderr)"
