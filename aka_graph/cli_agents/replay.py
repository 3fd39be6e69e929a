"""The replay backend: a recorded agent that makes campaigns reproducible without a model or a network.

It powers the demo and the graph's crash/resume tests: deterministic and stateless (the same `AgentRun`
always replays the same turn, so a campaign killed mid-turn and resumed replays exactly the same thing).

Script format (JSON; file paths are relative to the script's directory)::

    {
      "schema": "aka_graph.replay.v1",
      "turns": [
        {
          "role": "implementer",                  # exact role, or a glob such as "reviewer:*"
          "labels": {"episode": "1", "trial": "2"},  # must all equal the run's labels (a subset match)
          "resume": false,                        # optional: true = only resumed runs, false = only fresh
          "edits": [                              # applied in order inside run.cwd
            {"path": "kernel.py", "source": "kernels/fast.py"},      # copy a file next to the script
            {"path": "plans/episode_{episode}.md", "content": "..."}, # write literal text
            {"path": "scratch.txt", "delete": true}
          ],
          "final_text": "what the agent says at the end",
          "tokens": {"input": 1200, "output": 300, "cache_read": 0, "cache_write": 0},  # total = sum
          "exit_code": 0, "failed": false, "error": "", "timed_out": false,
          "session_id": "optional fixed id",
          "sleep_s": 0                            # optional: pretend to work (for kill tests)
        }
      ]
    }

Selection: among turns whose role matches and whose labels are all present in the run's labels, the one
with the most labels wins, an exact role beats a glob, and ties go to the earlier turn. `{label}` in an
edit's path or content and in `final_text` is replaced by the run's label value. No matching turn, or an
edit that cannot be applied, gives a failed `AgentResult` naming the problem (never an exception).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from aka_graph.cli_agents.base import (
    AgentNotReady,
    AgentResult,
    AgentRun,
    BudgetExceeded,
    TokenObserver,
    TokenUsage,
)

SCHEMA = "aka_graph.replay.v1"


class ReplayEdit(BaseModel):
    path: str
    source: str | None = None
    content: str | None = None
    delete: bool = False


class ReplayTokens(BaseModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int | None = None

    def usage(self) -> TokenUsage:
        total = self.total if self.total is not None else (
            self.input + self.output + self.cache_read + self.cache_write)
        return TokenUsage(input=self.input, output=self.output, cache_read=self.cache_read,
                          cache_write=self.cache_write, total=total, accuracy="exact")


class ReplayTurn(BaseModel):
    role: str
    labels: dict[str, str] = Field(default_factory=dict)
    resume: bool | None = None
    edits: list[ReplayEdit] = Field(default_factory=list)
    final_text: str = ""
    tokens: ReplayTokens = Field(default_factory=ReplayTokens)
    exit_code: int = 0
    failed: bool = False
    error: str = ""
    timed_out: bool = False
    session_id: str | None = None
    sleep_s: float = Field(default=0.0, ge=0)


class ReplayScript(BaseModel):
    schema_id: str = Field(default=SCHEMA, alias="schema")
    description: str = ""
    turns: list[ReplayTurn]

    model_config = {"populate_by_name": True}


def _fill(text: str, labels: dict[str, str]) -> str:
    for key, value in labels.items():
        text = text.replace("{" + key + "}", value)
    return text


def _inside(base: Path, rel: str) -> Path | None:
    """`base/rel` if it stays inside `base`, else None."""
    if not rel or Path(rel).is_absolute():
        return None
    target = (base / rel).resolve()
    return target if target.is_relative_to(base.resolve()) else None


class ReplayBackend:
    """`AgentBackend` that replays a JSON script (see the module docstring for the format)."""

    name = "replay"

    def __init__(self, script: Path) -> None:
        self.script = Path(script)

    def check_ready(self) -> None:
        self._load()

    def _load(self) -> ReplayScript:
        if not self.script.is_file():
            raise AgentNotReady(f"replay script {self.script} not found: pass --replay-script PATH")
        try:
            script = ReplayScript.model_validate_json(self.script.read_text())
        except ValidationError as e:
            raise AgentNotReady(f"replay script {self.script} is invalid: {e}") from e
        if script.schema_id != SCHEMA:
            raise AgentNotReady(
                f"replay script {self.script} has schema {script.schema_id!r}; set it to {SCHEMA!r}")
        return script

    def select(self, script: ReplayScript, run: AgentRun) -> ReplayTurn | None:
        resumed = run.resume_session is not None
        best: tuple[int, int, int] | None = None
        chosen = None
        for index, turn in enumerate(script.turns):
            exact = turn.role == run.role
            if not (exact or fnmatch.fnmatchcase(run.role, turn.role)):
                continue
            if any(run.labels.get(k) != v for k, v in turn.labels.items()):
                continue
            if turn.resume is not None and turn.resume != resumed:
                continue
            rank = (len(turn.labels) + (1 if turn.resume is not None else 0), int(exact), -index)
            if best is None or rank > best:
                best, chosen = rank, turn
        return chosen

    def session_id(self, run: AgentRun, turn: ReplayTurn | None) -> str:
        if run.resume_session:
            return run.resume_session
        if turn is not None and turn.session_id:
            return turn.session_id
        key = json.dumps({"role": run.role, "labels": run.labels}, sort_keys=True)
        return "replay-" + hashlib.sha256(key.encode()).hexdigest()[:16]

    def run(self, run: AgentRun, on_tokens: TokenObserver | None = None) -> AgentResult:
        transcript = self._transcript_path(run)
        try:
            script = self._load()
        except AgentNotReady as e:
            return self._failed(run, transcript, str(e), None)
        turn = self.select(script, run)
        if turn is None:
            key = {"role": run.role, "labels": dict(sorted(run.labels.items())),
                   "resume": run.resume_session is not None}
            missing = f"replay script {self.script} has no turn for {json.dumps(key)}: add one"
            return self._failed(run, transcript, missing, None)
        if turn.sleep_s:
            time.sleep(turn.sleep_s)
        tokens = turn.tokens.usage()
        session = self.session_id(run, turn)
        if on_tokens is not None:
            try:  # observed before the edits, as a streaming CLI reports usage while it works
                on_tokens(tokens)
            except BudgetExceeded as exc:  # the contract: a stopped turn, never an exception
                stop = f"stopped by the token budget: {exc}"
                return self._stopped(run, transcript, session, tokens, stop)
        problem = self._apply(turn, run)
        final_text = _fill(turn.final_text, run.labels)
        self._write_transcript(transcript, run, turn, session, final_text, problem)
        if problem:
            return AgentResult(exit_code=1, session_id=session, tokens=tokens, transcript_path=transcript,
                               final_text=final_text, failed=True, error=problem)
        return AgentResult(exit_code=turn.exit_code, session_id=session, tokens=tokens,
                           transcript_path=transcript, final_text=final_text, timed_out=turn.timed_out,
                           failed=turn.failed, error=turn.error)

    def _apply(self, turn: ReplayTurn, run: AgentRun) -> str:
        """Apply the turn's edits in run.cwd; returns a problem description or ''."""
        base = self.script.parent
        for edit in turn.edits:
            target = _inside(Path(run.cwd), _fill(edit.path, run.labels))
            if target is None:
                return f"replay edit path {edit.path!r} leaves the working directory {run.cwd}"
            if edit.delete:
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if edit.source is not None:
                source = _inside(base, edit.source)
                if source is None or not source.is_file():
                    return f"replay edit source {edit.source!r} not found next to {self.script}"
                shutil.copyfile(source, target)
            elif edit.content is not None:
                target.write_text(_fill(edit.content, run.labels))
            else:
                return f"replay edit of {edit.path!r} has neither source, content nor delete"
        return ""

    def _transcript_path(self, run: AgentRun) -> Path:
        slug = "-".join([run.role.replace(":", "_").replace("/", "_"),
                         *(f"{k}{v}" for k, v in sorted(run.labels.items()))])
        suffix = "-resumed" if run.resume_session else ""
        return Path(run.transcript_dir) / f"replay-{slug}{suffix}.jsonl"

    def _write_transcript(self, path: Path, run: AgentRun, turn: ReplayTurn | None, session: str | None,
                          final_text: str, problem: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        events: list[dict[str, Any]] = [
            {"type": "start", "backend": self.name, "script": str(self.script), "role": run.role,
             "labels": run.labels, "session_id": session, "resume_session": run.resume_session,
             "cwd": str(run.cwd), "prompt": run.prompt},
        ]
        if turn is not None:
            events += [{"type": "edit", **e.model_dump(exclude_none=True)} for e in turn.edits]
            events.append({"type": "result", "final_text": final_text,
                           "tokens": turn.tokens.usage().model_dump(), "error": problem or turn.error})
        else:
            events.append({"type": "result", "error": problem})
        path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))

    def _stopped(self, run: AgentRun, transcript: Path, session: str, tokens: TokenUsage,
                 error: str) -> AgentResult:
        """The token observer stopped the turn before its edits: like a CLI whose process group was ended."""
        self._write_transcript(transcript, run, None, session, "", error)
        partial = tokens.model_copy(update={"accuracy": "partial"})
        return AgentResult(exit_code=1, session_id=session, tokens=partial, transcript_path=transcript,
                           final_text="", failed=True, error=error, stopped=True)

    def _failed(self, run: AgentRun, transcript: Path, error: str, turn: ReplayTurn | None) -> AgentResult:
        self._write_transcript(transcript, run, turn, None, "", error)
        return AgentResult(exit_code=1, session_id=None, tokens=TokenUsage(accuracy="exact"),
                           transcript_path=transcript, final_text="", failed=True, error=error)
