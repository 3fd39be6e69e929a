"""An outside optimizer loop (tests/fixtures/source_tree/scripted_loop.py) run as an episode by the
outside-loop backend: killed whole at its deadline, its claimed best re-scored by our evaluator, its
harness edits and edits outside the editable set caught and undone."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import git
import pytest

from aka_graph.cli_agents.base import AgentRun
from aka_graph.cli_agents.outside_loop import OutsideLoopBackend
from aka_graph.cli_agents.registry import make_backend
from aka_graph.cli_agents.sandbox import AgentSandbox
from aka_graph.tasks.loader import load_task
from aka_graph.tasks.seeding import seed_workspace
from tests.tasks.conftest import FIXTURE, VARIANTS
from tests.tasks.test_command_task_production import hits
from tests.tasks.test_seeding_guard import campaign_repo

LOOP = FIXTURE / "scripted_loop.py"


def alive(pid: int) -> bool:
    """A live process (a zombie waiting for a reaper is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def episode(minikern: Path, tmp_path: Path, mode: str, timeout_s: float, sandbox=None):
    ws = tmp_path / "ws"
    campaign_repo(ws)
    seed_workspace(load_task(minikern), ws)
    pids = tmp_path / "pids.json"
    backend = OutsideLoopBackend(
        [sys.executable, str(LOOP), mode, str(pids)],
        minikern,
        device="cpu",
        seeds=1,
        sandbox=sandbox,
        term_grace_s=1.0,
    )
    backend.check_ready()
    run = AgentRun(
        role="implementer",
        prompt="make minikern faster",
        cwd=ws,
        timeout_s=timeout_s,
        transcript_dir=tmp_path / "transcripts",
        labels={"episode": "1", "trial": "1"},
    )
    return backend.run(run), ws, pids


def test_the_loop_is_killed_at_its_deadline_with_all_its_children(minikern: Path, tmp_path: Path) -> None:
    result, _, pids = episode(minikern, tmp_path, "hang", timeout_s=20)
    assert result.timed_out and not result.ok
    helper, grandchild = json.loads(pids.read_text())  # spawned before the deadline
    assert not alive(helper) and not alive(grandchild)
    assert result.tokens.total == 55 and result.tokens.accuracy == "exact"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_claimed_best_is_rescored_by_our_evaluator(sandbox, minikern: Path, tmp_path: Path) -> None:
    result, ws, pids = episode(minikern, tmp_path, "optimize", timeout_s=900, sandbox=sandbox)
    assert result.ok and not result.timed_out, result.error
    summary = json.loads(result.final_text)
    # what the loop saw through the driver shim: OUR compile (of a broken C++ edit) and OUR benchmark
    log = [
        json.loads(x)
        for x in (tmp_path / "transcripts/outside_loop/driver_log.jsonl").read_text().splitlines()
    ]
    assert [(e["action"], e["status"]) for e in log] == [("compile", "COMPILE_ERROR"), ("bench", "PASS")]
    claim, rescored = summary["claims"][-1], summary["rescored"]
    assert claim["objective_us"] == log[1]["objective_us"]
    assert rescored["status"] == "PASS" and rescored["sha256"] == claim["sha256"]
    assert rescored["objective_us"] > 0 and rescored["ratio_to_claim"] is not None
    helper, grandchild = json.loads(pids.read_text())  # left running when the loop exited
    assert not alive(helper) and not alive(grandchild)
    assert result.tokens.total == 2150
    changed = git.Repo(ws).git.status("--porcelain").splitlines()
    assert changed == [" M tree/minikern/triton_ops.py"]
    assert (ws / "tree/minikern/triton_ops.py").read_bytes() == (VARIANTS / "triton_ops_fast.py").read_bytes()


def test_harness_and_outside_edits_are_undone_and_not_scored(minikern: Path, tmp_path: Path) -> None:
    result, ws, _ = episode(minikern, tmp_path, "tamper", timeout_s=300)
    assert result.failed and "bench/bench.py" in result.error and "notes_outside_tree.txt" in result.error
    state = tmp_path / "transcripts" / "outside_loop"
    log = [json.loads(x) for x in (state / "driver_log.jsonl").read_text().splitlines()]
    assert log[0]["status"] == "FORBIDDEN_EDIT"  # the iteration's guard refused to measure
    assert len((state / "guard.jsonl").read_text().splitlines()) == 2  # that iteration + the end of the run
    summary = json.loads(result.final_text)
    assert summary["rescored"] is None
    # the editable edit is undone too (nothing to score); a plan is evidence, kept as for any agent
    assert git.Repo(ws).git.status("--porcelain", "--untracked-files=all").splitlines() == [
        "?? plans/loop_notes.md"
    ]
    assert "plans" not in result.error
    tree = load_task(minikern).tree
    assert (ws / "tree/bench/bench.py").read_bytes() == (tree / "bench/bench.py").read_bytes()


def test_registry_builds_the_backend_from_the_environment(minikern: Path, monkeypatch) -> None:
    monkeypatch.setenv("AKA_OUTSIDE_LOOP_COMMAND", f"{sys.executable} {LOOP} hang /dev/null")
    monkeypatch.setenv("AKA_OUTSIDE_LOOP_TASK", str(minikern))
    backend = make_backend("outside-loop")
    assert isinstance(backend, OutsideLoopBackend) and backend.command[-2:] == ["hang", "/dev/null"]
    backend.check_ready()
    monkeypatch.setenv("AKA_OUTSIDE_LOOP_COMMAND", "")
    with pytest.raises(Exception, match="AKA_OUTSIDE_LOOP_COMMAND"):
        make_backend("outside-loop").check_ready()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_in_production_mode_the_loop_is_confined_and_sees_no_private_case(
    sandbox, minikern: Path, tmp_path: Path, monkeypatch
) -> None:
    """A sandboxed run (production mode) of the optimizing loop on the task with private cases: the loop
    runs confined (the operator's directory, with the task file, hidden from it) and reaches our driver
    only through the shim's socket; the shim's answers, the driver log, the re-scoring and every file the
    episode left (worktree, transcripts, the loop's state) carry statuses, objectives and digests only;
    the jobs' files are gone; the helper the loop left behind is killed."""
    ws = tmp_path / "ws"
    campaign_repo(ws)
    task = minikern / "aka_task_private.toml"
    seed_workspace(load_task(task), ws)
    loop = tmp_path / "loop"  # the loop's own installation (readable to it), outside the operator's dir
    loop.mkdir()
    shutil.copyfile(LOOP, loop / LOOP.name)
    shutil.copytree(VARIANTS, loop / "variants")
    monkeypatch.setenv("SCRIPTED_LOOP_SNOOP", str(task))
    backend = OutsideLoopBackend(
        [sys.executable, str(loop / LOOP.name), "optimize", "-"], task, device="cpu", seeds=1,
        sandbox=sandbox, term_grace_s=1.0,
    )  # fmt: skip
    transcripts = tmp_path / "transcripts"
    run = AgentRun(
        role="implementer",
        prompt="make minikern faster",
        cwd=ws,
        timeout_s=900,
        transcript_dir=transcripts,
        labels={"episode": "1", "trial": "1"},
        sandbox=AgentSandbox(writable=(ws,), hidden=(minikern, transcripts), mode="auto"),
    )
    result = backend.run(run)
    assert result.ok, result.error
    output = Path(result.transcript_path).read_text()
    assert '{"type": "snoop", "readable": false}' in output  # the task file is out of the loop's reach
    state = transcripts / "outside_loop"
    log = [json.loads(x) for x in (state / "driver_log.jsonl").read_text().splitlines()]
    assert [(e["action"], e["status"], e["message"]) for e in log] == [
        ("compile", "COMPILE_ERROR", "COMPILE_ERROR (details withheld: private shapes)"),
        ("bench", "PASS", "PASS (details withheld: private shapes)"),
    ]
    assert '"status": "PASS", "objective_us": ' in output  # the loop got the driver's answer
    rescored = json.loads(result.final_text)["rescored"]
    assert rescored["status"] == "PASS" and rescored["objective_us"] > 0
    assert rescored["message"] == "PASS (details withheld: private shapes)"
    scratch = json.loads((state / "driver.json").read_text())["scratch_root"]
    assert scratch and not Path(scratch).exists()  # the jobs' files (cases included) are removed
    helper, grandchild = json.loads((state / "loop" / "pids.json").read_text())
    assert not alive(helper) and not alive(grandchild)
    assert (ws / "tree/minikern/triton_ops.py").read_bytes() == (VARIANTS / "triton_ops_fast.py").read_bytes()
    leaks = {
        str(p.relative_to(tmp_path)): hits(p.read_bytes())
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_relative_to(minikern) and ".git" not in p.parts
    }
    assert {where: found for where, found in leaks.items() if found} == {}
