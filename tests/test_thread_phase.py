"""A thread's phase, read from real LangGraph checkpoints: including the one a process leaves when it dies
after a node's writes were saved but before the step's checkpoint was (its `next` is empty mid-run)."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from aka_graph.thread_phase import resume_point, thread_phase


class State(TypedDict):
    ran: Annotated[list[str], operator.add]


class Died(BaseException):
    """Stands for `kill -9`: raised by the saver, so nothing after it in this process runs."""


def _dies_before_checkpoint(saver_class: type, step: int) -> type:
    class DiesBeforeCheckpoint(saver_class):  # type: ignore[misc, valid-type]
        """Saves every write, then dies (once) instead of saving the checkpoint of `step`."""

        armed = True

        def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            if self.armed and metadata.get("step") == step:
                self.armed = False
                raise Died
            return super().put(config, checkpoint, metadata, new_versions)

    return DiesBeforeCheckpoint


def graph(log: list[str]) -> StateGraph:
    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            log.append(name)
            return {"ran": [name]}

        return run

    builder = StateGraph(State)
    for name in ("first", "second", "third"):
        builder.add_node(name, node(name))
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "third")
    builder.add_edge("third", END)
    return builder


CFG = {"configurable": {"thread_id": "t"}}


def test_new_and_finished_threads() -> None:
    compiled = graph([]).compile(checkpointer=InMemorySaver())
    assert thread_phase(compiled.get_state(CFG)) == "new"
    compiled.invoke({"ran": []}, CFG, durability="sync")
    assert thread_phase(compiled.get_state(CFG)) == "finished"


def test_a_thread_killed_inside_a_node_is_interrupted_at_that_node() -> None:
    log: list[str] = []

    def second(state: State) -> dict[str, Any]:
        raise Died

    builder = graph(log)
    builder.nodes.pop("second")
    builder.add_node("second", second)
    compiled = builder.compile(checkpointer=InMemorySaver())
    with pytest.raises(Died):
        compiled.invoke({"ran": []}, CFG, durability="sync")
    snapshot = compiled.get_state(CFG)
    assert thread_phase(snapshot) == "interrupted" and resume_point(snapshot) == "second"


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
def test_a_thread_killed_between_a_nodes_writes_and_its_checkpoint_is_interrupted_not_finished(
    saver: str, tmp_path: Path
) -> None:
    log: list[str] = []
    # step 0 runs `first`; step 1 runs `second`: its writes are saved, then the process dies
    if saver == "memory":
        checkpointer = _dies_before_checkpoint(InMemorySaver, step=2)()
        reopen = checkpointer  # (its death is spent)
    else:
        import sqlite3

        conn = sqlite3.connect(tmp_path / "c.sqlite", check_same_thread=False)
        checkpointer = _dies_before_checkpoint(SqliteSaver, step=2)(conn)
        reopen = SqliteSaver(conn)  # the next process reads the same file with a plain saver
    with pytest.raises(Died):
        graph(log).compile(checkpointer=checkpointer).invoke({"ran": []}, CFG, durability="sync")
    assert log == ["first", "second"]

    compiled = graph(log).compile(checkpointer=reopen)
    snapshot = compiled.get_state(CFG)
    assert snapshot.next == ()  # what the old "values and not next" test read as a finished campaign
    assert thread_phase(snapshot) == "interrupted"
    assert resume_point(snapshot) == "the end of second"

    compiled.invoke(None, CFG, durability="sync")  # resuming applies the saved writes; `second` never reruns
    assert log == ["first", "second", "third"]
    final = compiled.get_state(CFG)
    assert thread_phase(final) == "finished" and final.values["ran"] == ["first", "second", "third"]
