"""Handoff recovery: a turn that ends without satisfying its contract is continued, not thrown away.

The caller states the contract as `missing(result) -> str | None` (what is still lacking, None when
satisfied). Up to `max_resumes` times the same session is resumed with a message naming what is
missing; a CLI without resume (or a run that produced no session) gets a fresh session whose prompt
restates the original task and the previous attempt's last words. A run stopped by the token budget or
ended by its timeout is not continued. Every invocation's result is returned, so its tokens count.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aka_graph.cli_agents.base import AgentBackend, AgentResult, AgentRun, TokenObserver, TokenUsage

MAX_RESTATED_TEXT = 4000


def resume_prompt(what: str) -> str:
    return (
        "Your previous turn ended before the task was complete. Still missing: "
        f"{what}\nContinue from where you stopped (your earlier changes are in the workspace) and finish it."
    )


def restated_prompt(original: str, what: str, previous: AgentResult) -> str:
    last = previous.final_text.strip()[-MAX_RESTATED_TEXT:] or "(no final message)"
    return (
        f"{original}\n\n---\nA previous attempt at this task ended before it was complete. Still missing: "
        f"{what}\nIts last message was:\n{last}\n"
        "Its changes are already in the workspace: inspect them and continue from there."
    )


def run_with_handoff(
    backend: AgentBackend,
    run: AgentRun,
    missing: Callable[[AgentResult], str | None],
    max_resumes: int = 2,
    on_tokens: TokenObserver | None = None,
    *,
    total_timeout_s: float | None = None,
) -> list[AgentResult]:
    """Run `run`, then resume while `missing` reports a gap (at most `max_resumes` more invocations).

    `on_tokens` sees the running total over all invocations of this handoff (so one budget covers
    them); `total_timeout_s` (optional) bounds the whole handoff, each invocation getting what is left.
    """
    if max_resumes < 0:
        raise ValueError(f"max_resumes must be >= 0, got {max_resumes}")
    start = time.monotonic()
    results: list[AgentResult] = []
    spent = TokenUsage(accuracy="exact")

    def observer(current: TokenUsage) -> None:
        if on_tokens is not None:
            on_tokens(spent + current)

    current_run = run
    while True:
        result = backend.run(current_run, on_tokens=observer if on_tokens else None)
        results.append(result)
        spent = spent + result.tokens
        what = missing(result)
        if what is None or result.stopped or result.timed_out or len(results) > max_resumes:
            return results
        timeout = run.timeout_s
        if total_timeout_s is not None:
            timeout = min(timeout, total_timeout_s - (time.monotonic() - start))
            if timeout <= 1:
                return results
        labels = {**run.labels, "handoff": str(len(results))}
        can_resume = getattr(backend, "supports_resume", True) and result.session_id is not None
        if can_resume:
            current_run = run.model_copy(
                update={
                    "prompt": resume_prompt(what),
                    "resume_session": result.session_id,
                    "timeout_s": timeout,
                    "labels": labels,
                }
            )
        else:
            current_run = run.model_copy(
                update={
                    "prompt": restated_prompt(run.prompt, what, result),
                    "resume_session": None,
                    "timeout_s": timeout,
                    "labels": labels,
                }
            )
