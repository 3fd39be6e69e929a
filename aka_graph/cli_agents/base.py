"""The agent contract (design §3 'Agent run'): one invocation of a coding CLI and what it reports.

Backends (claude, codex, qoder, pi, replay) implement `AgentBackend`; the graph only sees these models,
so token budgets and handoff rules are the same whichever CLI does the work.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from aka_graph.cli_agents.sandbox import AgentSandbox

Effort = Literal["low", "medium", "high", "xhigh", "max"]
TokenAccuracy = Literal["exact", "partial", "unavailable"]


class TokenUsage(BaseModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0
    accuracy: TokenAccuracy = "unavailable"

    def __add__(self, other: TokenUsage) -> TokenUsage:
        worst = "unavailable" if "unavailable" in (self.accuracy, other.accuracy) else (
            "partial" if "partial" in (self.accuracy, other.accuracy) else "exact"
        )
        return TokenUsage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            total=self.total + other.total,
            accuracy=worst,
        )


class AgentRun(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: str = Field(description="e.g. implementer, planner, reviewer:<name>, problem_deriver")
    prompt: str
    cwd: Path
    effort: Effort = "high"
    timeout_s: float = Field(gt=0)
    resume_session: str | None = Field(default=None, description="continue this session instead of a new one")
    transcript_dir: Path = Field(description="where raw stdout/stderr of this invocation are saved")
    model: str | None = None
    labels: dict[str, str] = Field(
        default_factory=dict, description="e.g. episode/trial ids; used by logs and the replay backend"
    )
    sandbox: AgentSandbox | None = Field(
        default=None, description="filesystem isolation of the CLI process (None: runs unconfined)"
    )


class AgentResult(BaseModel):
    exit_code: int
    session_id: str | None
    tokens: TokenUsage
    transcript_path: Path
    final_text: str
    timed_out: bool = False
    failed: bool = Field(default=False, description="the CLI reported an error (is_error, turn.failed, ...)")
    error: str = ""
    stopped: bool = Field(
        default=False, description="ended early because the token observer raised `BudgetExceeded`"
    )

    @property
    def ok(self) -> bool:
        return not (self.failed or self.timed_out) and self.exit_code == 0


TokenObserver = Callable[[TokenUsage], None]
"""Called with the invocation's running token total while the CLI streams (so budgets can stop it)."""


class BudgetExceeded(Exception):
    """Raised by a `TokenObserver` to stop the running CLI: its process group is terminated and the
    result comes back with `stopped=True`, `failed=True` and this message in `error`."""


class AgentNotReady(RuntimeError):
    """The CLI is missing or not logged in; the message names the command that fixes it."""


@runtime_checkable
class AgentBackend(Protocol):
    name: str

    def check_ready(self) -> None:
        """Raise `AgentNotReady` with the fixing command if this CLI cannot run here."""
        ...

    def run(self, run: AgentRun, on_tokens: TokenObserver | None = None) -> AgentResult:
        """Run one turn; never raises for a failed or timed-out CLI (that is in the result)."""
        ...
