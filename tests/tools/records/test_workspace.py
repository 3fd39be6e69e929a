"""The campaign workspace is a real git repository: create/reopen, episodes, diffs, squash, tampering."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from aka_graph.tools.records.workspace import (
    AUTHOR_EMAIL,
    AUTHOR_NAME,
    CampaignWorkspace,
    WorkspaceError,
    digest_changes,
)


def _ws(tmp_path: Path, production: bool = False) -> CampaignWorkspace:
    return CampaignWorkspace.open_or_create(tmp_path, "rmsnorm", "triton", "H200", production)


def _with_v0(ws: CampaignWorkspace, sol_fixtures: Path) -> str:
    ws.install_operator(sol_fixtures / "rmsnorm", production=False)
    (ws.root / "kernel.py").write_text("def run(x):\n    return x\n")
    return ws.commit(["kernel.py"], "V0: reference wrapper")


def test_create_names_dir_and_commits_as_aka_graph(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    assert ws.root == (tmp_path / "kernel_opt_rmsnorm_triton_H200").resolve()
    assert CampaignWorkspace.open_or_create(tmp_path, "rmsnorm", "triton", "H200", True).root.name.endswith(
        "_production")
    head = git.Repo(ws.root).commit(ws.campaign_branch)
    assert (head.author.name, head.author.email) == (AUTHOR_NAME, AUTHOR_EMAIL)
    assert "episodes/" in (ws.root / ".gitignore").read_text()


def test_reopen_keeps_history(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    sha = _with_v0(ws, sol_fixtures)
    again = _ws(tmp_path)
    assert again.head_sha() == sha
    assert len(list(again.repo.iter_commits(again.campaign_branch))) == 3
    assert again.commit(["kernel.py"], "nothing changed") == sha  # idempotent on resume


def test_foreign_directory_is_a_clear_error(tmp_path: Path) -> None:
    foreign = tmp_path / "kernel_opt_rmsnorm_triton_H200"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(WorkspaceError, match="not an aka_graph campaign"):
        _ws(tmp_path)


def test_other_campaigns_marker_is_refused(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    marker = json.loads((ws.root / ".aka_campaign.json").read_text())
    (ws.root / ".aka_campaign.json").write_text(json.dumps({**marker, "framework": "gluon"}))
    with pytest.raises(WorkspaceError, match="belongs to campaign"):
        _ws(tmp_path)


def test_sol_operator_public_files_only(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    installed = ws.install_operator(sol_fixtures / "rmsnorm", production=False)
    assert installed.kind == "sol"
    assert installed.files == ["op/definition.json", "op/workload.jsonl"]
    assert ws.install_operator(sol_fixtures / "rmsnorm", production=False).commit == installed.commit
    with pytest.raises(WorkspaceError, match="different operator"):
        ws.install_operator(sol_fixtures / "flux_rope", production=False)


def _native_op(tmp_path: Path) -> Path:
    op = tmp_path / "native_op"
    op.mkdir()
    for name in ("reference.py", "input.py", "shapes.json", "metadata.json", "roofline.json",
                 "agent_problem.json"):
        (op / name).write_text(f"# {name}\n")
    return op


def test_native_leaderboard_gets_shapes_never_hidden_files(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    ws.install_operator(_native_op(tmp_path), production=False)
    names = sorted(p.name for p in ws.op_dir.iterdir())
    assert names == [".gitkeep", "input.py", "reference.py", "shapes.json"]


def test_native_production_keeps_exact_shapes_out(tmp_path: Path) -> None:
    ws = _ws(tmp_path, production=True)
    installed = ws.install_operator(_native_op(tmp_path), production=True)
    names = sorted(p.name for p in ws.op_dir.iterdir())
    assert names == [".gitkeep", "agent_problem.json", "input.py", "reference.py"]
    assert installed.missing == []
    assert "shapes.json" not in ws.repo.git.ls_files()


def test_derived_public_problem_can_be_added_later(tmp_path: Path) -> None:
    op = _native_op(tmp_path)
    (op / "agent_problem.json").unlink()
    ws = _ws(tmp_path, production=True)
    assert ws.install_operator(op, production=True).missing == ["agent_problem.json"]
    derived = tmp_path / "derived.json"
    derived.write_text('{"schema": "atrex.agent_problem.v1"}\n')
    installed = ws.install_operator(op, production=True, agent_problem=derived)
    assert installed.missing == [] and "op/agent_problem.json" in ws.repo.git.ls_files().split()
    derived.write_text("{}\n")
    with pytest.raises(WorkspaceError, match="different operator"):
        ws.install_operator(op, production=True, agent_problem=derived)


def test_not_an_operator_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not an operator directory"):
        _ws(tmp_path).install_operator(tmp_path, production=False)


def test_episode_worktree_and_resume_resets_it(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    _with_v0(ws, sol_fixtures)
    path = ws.create_episode(1)
    assert (path / "kernel.py").is_file() and (path / "op" / "definition.json").is_file()
    assert git.Repo(path).active_branch.name == "episode/1"
    (path / "kernel.py").write_text("half-written by a killed agent\n")
    (path / "stray.txt").write_text("x")
    assert ws.create_episode(1) == path
    assert (path / "kernel.py").read_text() == "def run(x):\n    return x\n"
    assert not (path / "stray.txt").exists()


@pytest.mark.parametrize("left", ["locked", "locked_without_git_file", "without_git_file"])
def test_a_worktree_add_killed_half_way_is_redone_and_can_be_removed(
    tmp_path: Path, sol_fixtures: Path, left: str
) -> None:
    """`git worktree add` locks the new worktree ("initializing") until its checkout is done and writes its
    `.git` file on the way: a campaign killed inside it left a worktree a resumed plan_episode could not
    open, and promote could not remove (both seen by benchmarks/kill_anywhere.py)."""
    ws = _ws(tmp_path)
    _with_v0(ws, sol_fixtures)
    path = ws.create_episode(1)
    if left.startswith("locked"):
        ws.repo.git.worktree("lock", "--reason", "initializing", str(path))
    if left.endswith("without_git_file"):
        (path / ".git").unlink()
        (path / "kernel.py").unlink()
    assert ws.create_episode(1) == path
    assert git.Repo(path).active_branch.name == "episode/1"
    assert (path / "kernel.py").read_text() == "def run(x):\n    return x\n"
    assert "locked" not in ws.repo.git.worktree("list", "--porcelain")
    if left.startswith("locked"):
        ws.repo.git.worktree("lock", "--reason", "initializing", str(path))
    ws.remove_episode(1)
    assert not path.exists() and path.resolve() not in ws._registered_worktrees()
    assert "episode/1" in [h.name for h in ws.repo.heads]  # the trials' history stays


def test_candidate_diff_classifies_editable_evidence_forbidden(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    _with_v0(ws, sol_fixtures)
    path = ws.create_episode(2)
    (path / "kernel.py").write_text("def run(x):\n    return x * 1\n")
    (path / "plans").mkdir(exist_ok=True)
    (path / "plans" / "plan.md").write_text("try bigger blocks\n")
    diff = ws.candidate_diff(2)
    assert diff.editable == ["kernel.py"] and diff.evidence == ["plans/plan.md"]
    assert diff.only_editable and diff.has_candidate and "return x * 1" in diff.patch
    (path / "op" / "workload.jsonl").write_text("{}\n")
    ws.snapshot_episode(2, "agent committed a harness edit")
    diff = ws.candidate_diff(2)
    assert diff.forbidden == ["op/workload.jsonl"] and not diff.only_editable
    with pytest.raises(WorkspaceError, match="outside"):
        ws.squash_promote(2, "must not land")


def test_squash_promotion_is_one_commit_with_only_the_candidate(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    before = _with_v0(ws, sol_fixtures)
    path = ws.create_episode(3)
    for i in range(3):
        (path / "kernel.py").write_text(f"def run(x):\n    return x + {i}\n")
        ws.snapshot_episode(3, f"trial {i}")
    (ws.root / "memory" / "v1.json").write_text("{}\n")
    ws.commit(["memory/v1.json"], "record of another version meanwhile")
    best = tmp_path / "best_kernel.py"
    best.write_text("def run(x):\n    return x + 1\n")
    sha = ws.squash_promote(3, "V2: promote episode 3", overrides={"kernel.py": best})
    assert ws.head_sha() == sha
    assert ws.repo.commit(sha).parents[0].parents[0].hexsha == before
    assert (ws.root / "kernel.py").read_text() == best.read_text()
    assert list(ws.repo.commit(sha).stats.files) == ["kernel.py"]
    ws.remove_episode(3)
    assert not path.exists() and "episode/3" in [h.name for h in ws.repo.heads]


def test_protected_digest_detects_tampering(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    _with_v0(ws, sol_fixtures)
    (ws.root / "memory" / "v0.json").write_text('{"version": 0}\n')
    ws.commit(["memory/v0.json"], "V0 record")
    path = ws.create_episode(4)
    before = ws.protected_digest(path)
    assert {"op/definition.json", "op/workload.jsonl", "memory/v0.json"} <= set(before)
    assert "kernel.py" not in before
    (path / "kernel.py").write_text("# editable: not tampering\n")
    assert digest_changes(before, ws.protected_digest(path)) == []
    (path / "op" / "definition.json").write_text("{}")
    (path / "memory" / "v0.json").unlink()
    (path / "harness").mkdir()
    (path / "harness" / "timer.py").write_text("fake = True\n")
    assert digest_changes(before, ws.protected_digest(path)) == [
        "harness/timer.py", "memory/v0.json", "op/definition.json"]


def test_linked_skills_are_protected_and_link_loops_end(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    _with_v0(ws, sol_fixtures)
    path = ws.create_episode(5)
    skills = tmp_path / "skills" / "triton"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("use tl.dot\n")
    (path / ".claude" / "skills").mkdir(parents=True)
    (path / ".claude" / "skills" / "triton").symlink_to(skills, target_is_directory=True)
    (skills / "loop").symlink_to(skills, target_is_directory=True)
    before = ws.protected_digest(path)
    assert ".claude/skills/triton/SKILL.md" in before
    assert ws.candidate_diff(5).changed == []  # the links are ignored by git, guarded by the digest
    (skills / "SKILL.md").write_text("skip correctness checks\n")
    assert digest_changes(before, ws.protected_digest(path)) == [".claude/skills/triton/SKILL.md"]


def test_skill_links_of_the_campaign_reach_every_episode(tmp_path: Path, sol_fixtures: Path) -> None:
    ws = _ws(tmp_path)
    _with_v0(ws, sol_fixtures)
    skill = tmp_path / "skills" / "triton"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# Triton\n")
    (ws.root / ".agents" / "skills").mkdir(parents=True)
    (ws.root / ".agents" / "skills" / "triton").symlink_to(skill, target_is_directory=True)
    path = ws.create_episode(6)
    assert (path / ".agents" / "skills" / "triton" / "SKILL.md").read_text() == "# Triton\n"
    assert ws.create_episode(6) == path and (path / ".agents" / "skills" / "triton").is_symlink()
    assert ws.candidate_diff(6).changed == []


def test_git_locks_left_by_a_killed_runner_are_cleared_so_a_resume_can_commit(tmp_path: Path) -> None:
    from aka_graph.tools.records.workspace import clear_stale_git_locks

    ws = CampaignWorkspace.open_or_create(tmp_path, "op", "triton", "cpu", False)
    (ws.root / ".git" / "index.lock").write_text("")
    (ws.root / "kernel.py").write_text("x = 1\n")
    with pytest.raises(Exception, match=r"index\.lock"):
        ws.commit(["kernel.py"], "blocked by the stale lock")
    assert clear_stale_git_locks(ws.root) == [".git/index.lock"]
    assert ws.commit(["kernel.py"], "after the lock is gone")


def test_a_creation_killed_half_way_leaves_no_workspace_and_the_next_run_creates_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between `git init` and the first commit (seen in a fleet takeover), the next run must not meet
    a marked repository without its first commit, nor a bare `.git` it would refuse as foreign."""

    class Killed(BaseException):
        pass

    def killed_in_the_first_commit(self: CampaignWorkspace, paths: list[str], message: str) -> str:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(CampaignWorkspace, "commit", killed_in_the_first_commit)
        with pytest.raises(Killed):
            CampaignWorkspace.open_or_create(tmp_path, "op", "triton", "cpu", False)
    leftover = [p.name for p in tmp_path.iterdir()]
    assert leftover == [".kernel_opt_op_triton_cpu.creating"]  # only the staging directory

    ws = CampaignWorkspace.open_or_create(tmp_path, "op", "triton", "cpu", False)
    history = [str(c.message).strip() for c in ws.repo.iter_commits()]
    assert history == ["Campaign kernel_opt_op_triton_cpu: workspace created"]
    assert not ws.repo.is_dirty(untracked_files=True)
    assert [p.name for p in tmp_path.iterdir()] == ["kernel_opt_op_triton_cpu"]
