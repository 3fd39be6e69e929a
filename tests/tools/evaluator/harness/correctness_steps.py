"""What the parent does during a correctness phase, in order, for tests that read its schedule: the
seeds' references it computes and the run commands it sends to the workers."""

from __future__ import annotations

from typing import Any

import pytest

from aka_graph.tools.evaluator.harness import modes
from aka_graph.tools.evaluator.harness.session import Session


def record_steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """A list that fills, as they happen, with ("reference", seed numbers or None for all) and ("run",
    how many seeds) for each of the parent's steps."""
    steps: list[tuple[str, Any]] = []
    send_run, reference_outputs = modes._send_run, Session.reference_outputs

    def recorded_send(session: Session, active: list, idx: int, seeds: list) -> dict:
        steps.append(("run", len(seeds)))
        return send_run(session, active, idx, seeds)

    def recorded_reference(self: Session, idx: int, which: list[int] | None = None) -> Any:
        steps.append(("reference", which))
        return reference_outputs(self, idx, which)

    monkeypatch.setattr(modes, "_send_run", recorded_send)
    monkeypatch.setattr(Session, "reference_outputs", recorded_reference)
    return steps
