"""Backend names -> backends: the one place the campaign turns `--agent-cli NAME` into an `AgentBackend`."""

from __future__ import annotations

from pathlib import Path

from aka_graph.cli_agents.base import AgentBackend

BACKEND_NAMES = ("claude", "codex", "qoder", "pi", "replay", "outside-loop")


class UnknownBackend(ValueError):
    """`--agent-cli`/`--reviewer` names no backend, or the replay backend has no script (a user error)."""


def make_backend(name: str, *, replay_script: Path | None = None) -> AgentBackend:
    """A backend by name; CLI settings come from `AKA_<CLI>_SESSION_SETTINGS` / `AKA_SESSION_SETTINGS`."""
    if name == "claude":
        from aka_graph.cli_agents.claude import ClaudeBackend

        return ClaudeBackend()
    if name == "codex":
        from aka_graph.cli_agents.codex import CodexBackend

        return CodexBackend()
    if name == "qoder":
        from aka_graph.cli_agents.qoder import QoderBackend

        return QoderBackend()
    if name == "pi":
        from aka_graph.cli_agents.pi import PiBackend

        return PiBackend()
    if name == "replay":
        if replay_script is None:
            raise UnknownBackend(
                "the replay backend needs a script: pass --replay-script <path to replay.json>"
            )
        from aka_graph.cli_agents.replay import ReplayBackend

        return ReplayBackend(replay_script)
    if name == "outside-loop":  # an existing optimizer loop (AKA_OUTSIDE_LOOP_COMMAND) on a command task
        from aka_graph.cli_agents.outside_loop import OutsideLoopBackend

        return OutsideLoopBackend.from_environment()
    raise UnknownBackend(f"unknown agent CLI {name!r}; choose one of: {', '.join(BACKEND_NAMES)}")
