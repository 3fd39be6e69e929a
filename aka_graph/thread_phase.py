"""Where a campaign's LangGraph thread stands, read from its latest checkpoint: new, interrupted or finished.

Why not `snapshot.next` alone: with durability "sync", LangGraph saves a node's writes the moment the node
ends and the step's checkpoint only once the whole step is done. A process killed between the two leaves a
latest checkpoint whose only task already has its writes, so `next` (the tasks still without writes) is
empty although the campaign is mid-run. Read as "finished", that closed a campaign at `preprocess` when a
fleet coordinator took it over from a killed one (seen in CI), and a local re-run would have reported the
campaign done. A thread is finished only when its checkpoint has neither a node to run nor a task whose
writes wait to be applied; resuming such an interrupted thread (input `None`) applies those writes and
goes on without running the node again.

Every place that decides between starting, resuming and reporting a campaign (the runner, the fleet
coordinator, `status`) asks this module.
"""

from __future__ import annotations

from typing import Literal

from langgraph.types import StateSnapshot

Phase = Literal["new", "interrupted", "finished"]


def thread_phase(snapshot: StateSnapshot) -> Phase:
    """`new` (nothing checkpointed), `interrupted` (a node to run, or a finished node's writes not yet
    folded into a checkpoint) or `finished` (the graph reached its end)."""
    if snapshot.next or snapshot.tasks:
        return "interrupted"
    return "finished" if snapshot.values else "new"


def resume_point(snapshot: StateSnapshot) -> str:
    """Where an interrupted thread goes on, in words: the nodes to run, or the end of the node(s) whose
    writes wait in the checkpoint."""
    if snapshot.next:
        return ", ".join(snapshot.next)
    return "the end of " + ", ".join(task.name for task in snapshot.tasks)
