"""Production mode end to end: private shapes never reach the agent.

A real campaign (`python -m aka_graph run`, the replay agent, the local sandbox and the real harness on the
CPU) on a native RMSNorm whose `shapes.json` is private: the public problem is derived by an agent
session, V1 is written and reviewed, episode 1's kernel is promoted and episode 2's is incorrect. Then an
audit that does not trust the campaign's own scanner searches every file under the workspace, every git
object of the repository (every branch, unreachable ones too), every prompt and transcript for each
private id and each private shape value: zero hits. A second campaign whose history is made to leak (the
agent commits a private value in its notes) must fail where the leak happens: non-zero exit, no
submission, the reason in the report.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "private_rmsnorm"
SHAPES = json.loads((FIXTURE / "op" / "shapes.json").read_text())
PRIVATE_IDS = list(SHAPES)
PRIVATE_VALUES = sorted({v for s in SHAPES.values() for part in s.values() for v in part.values()})
CAMPAIGN = "kernel_opt_op_triton_cpu_production"


def run_campaign(tmp_path: Path, replay: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    op = tmp_path / "operators" / "op"  # a copy: the campaign must not need the fixture's location
    shutil.copytree(FIXTURE / "op", op)
    argv = [
        sys.executable, "-m", "aka_graph", "run", "--op-dir", str(op), "--platform", "cpu",
        "--framework", "triton", "--agent-cli", "replay", "--replay-script", str(replay),
        "--optimization-mode", "production", "--seeds", "1", "--fast-trials", "1", "--verify-repeats", "3",
        "--workspace", str(tmp_path / "runs"), *extra,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=1200, cwd=tmp_path)


def mentions(value: int, text: str, prose: bool = True) -> bool:
    """`value` as a number of its own in `text`: not part of a word, a hash (37eb33896e) or a decimal.
    In `prose` (the campaign's Markdown report), not a group of a number written with thousands
    separators either: a latency of 211,583.75 us on a loaded host is no leak of 211. Elsewhere (JSON,
    code, git objects) 3,211 may be a compact list and counts."""
    if prose:
        text = re.sub(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d,])", lambda m: m.group().replace(",", ""), text)
    return re.search(rf"(?<![\w.]){value}(?![\w]|\.\d)", text) is not None


def hits(text: str, home: Path, prose: bool = False) -> list[str]:
    """Each private id (anywhere) and each private shape value (as a number of its own) found in text;
    the directory the campaign runs in is the user's and its name says nothing of the shapes."""
    found = [i for i in PRIVATE_IDS if i in text]
    text = text.replace(str(home), "HOME")
    found += [str(v) for v in PRIVATE_VALUES if mentions(v, text, prose)]
    return found


def audit(workspace: Path, home: Path) -> dict[str, list[str]]:
    """Every file under the campaigns' workspace (worktrees, results, ledger, report, transcripts with
    their prompts) and every git object; only the checkpoint directory (outside every agent's reach,
    where the id mapping lives by design) is left out."""
    leaks: dict[str, list[str]] = {}
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace)
        if rel.parts[0] == "checkpoints" or ".git" in rel.parts or not path.is_file() or path.is_symlink():
            continue
        found = hits(path.read_bytes().decode("utf-8", errors="replace"), home, prose=path.suffix == ".md")
        if found:
            leaks[str(rel)] = found
    repo = workspace / CAMPAIGN
    names = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects",
         "--batch-check=%(objectname) %(objecttype)"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")
    objects = [line.split() for line in names if line]
    assert len(objects) > 20  # the whole history is really being read
    for sha, kind in objects:
        if kind == "tree":
            body = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", sha],
                                  capture_output=True, text=True, check=True).stdout
        else:
            body = subprocess.run(["git", "-C", str(repo), "cat-file", "-p", sha],
                                  capture_output=True, check=True).stdout.decode("utf-8", errors="replace")
        found = hits(body, home)
        if found:
            leaks[f"git {kind} {sha}"] = found
    return leaks


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_production_campaign_leaks_no_private_shape_anywhere(tmp_path: Path) -> None:
    # the campaign runs in a directory whose name holds a private value, as pytest's own numbering once
    # did on CI (`pytest-211`): every transcript names that path, and it is no leak
    home = tmp_path / f"job-{PRIVATE_VALUES[0]}"
    home.mkdir()
    done = run_campaign(home, FIXTURE / "replay.json", "--max-iters", "2", "--fast-episodes", "2")
    assert done.returncode == 0, done.stderr[-4000:]
    workspace = home / "runs"
    root = workspace / CAMPAIGN
    records = read_version_records(root)
    assert [(r.version, r.decision) for r in records] == [
        (0, "baseline"), (1, "pinned"), (2, "promoted"), (3, "incorrect")]
    assert records[2].objective < records[1].objective
    # the records the agent reads name workloads by opaque ids only, and the same ones every time
    opaque = {p.id for p in records[0].performance}
    assert len(opaque) == 3 and all(re.fullmatch(r"w_[a-z]{12}", i) for i in opaque)
    assert {p.id for p in records[2].performance} == opaque
    mapping_file = workspace / "checkpoints" / f"{CAMPAIGN}.private" / "opaque_ids.json"
    assert set(json.loads(mapping_file.read_text())) == set(PRIVATE_IDS)
    assert stat.S_IMODE(mapping_file.stat().st_mode) == 0o600
    assert not (workspace / "checkpoints" / f"{CAMPAIGN}.problem").exists()  # the deriver's scratch copy
    # V1 and every candidate that could become the incumbent went through the policy review
    policy = [(d.episode, d.decision) for d in Ledger(root / "records" / "ledger.sqlite").decisions()
              if d.kind == "policy"]
    assert policy == [(0, "pass"), (1, "pass")]
    transcripts = list((root / "transcripts").rglob("*.jsonl"))
    assert len(transcripts) >= 5 and any("prompt" in t.read_text() for t in transcripts)
    assert audit(workspace, home) == {}
    assert "Privacy check passed" in (root / "report" / "report.md").read_text()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_campaign_whose_history_leaks_fails_where_the_leak_happens(tmp_path: Path) -> None:
    script = json.loads((FIXTURE / "replay.json").read_text())
    for turn in script["turns"]:  # the agent writes a private value into its notes: a leak in git history
        if turn.get("labels") == {"episode": "1", "trial": "1"}:
            turn["edits"].append({"path": "plans/notes.md", "content": "special-case tokens == 389\n"})
    replay = FIXTURE / "replay.json"
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(script))
    shutil.copytree(replay.parent / "kernels", tmp_path / "kernels")
    shutil.copyfile(replay.parent / "agent_problem.json", tmp_path / "agent_problem.json")
    done = run_campaign(tmp_path, leaky, "--max-iters", "2", "--fast-episodes", "2", "--v1", "never")
    assert done.returncode == 4, (done.returncode, done.stderr[-3000:])
    root = tmp_path / "runs" / CAMPAIGN
    assert not (root / "submission.json").exists()
    report = (root / "report" / "report.md").read_text()
    assert "privacy check failed" in report.lower()
    assert not mentions(389, report) and not any(i in report for i in PRIVATE_IDS)  # the reason leaks nothing
    assert [r.version for r in read_version_records(root)] == [0]  # stopped at the leaking commit
