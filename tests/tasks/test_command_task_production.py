"""Production mode for a command task, end to end: the task's cases are private, like a native operator's
`shapes.json`.

A real campaign (`python -m aka_graph run --optimization-mode production`, the replay agent, git, the
local sandbox, the tree's own C++ build and the Triton interpreter) over the minikern tree with
`aka_task_private.toml`: episode 1's trials are a broken C++ build, a kernel wrong only at the scored
shape, and a faster kernel, which passes the policy review and is promoted. Then an audit that does not
trust the campaign's own scanner reads every file under the workspace (worktrees, results, ledger,
report, transcripts with their prompts) and every git object (all branches, unreachable ones too) for
each private case id and each private case parameter: zero hits.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from aka_graph.tools.records.ledger import Ledger
from aka_graph.tools.records.memory import read_version_records
from tests.tasks.conftest import FIXTURE

TASK = FIXTURE / "aka_task_private.toml"
CASES = [c for kind in tomllib.loads(TASK.read_text())["cases"].values() for c in kind]
PRIVATE_IDS = [c["id"] for c in CASES]
# the parameters worth searching for (>= 100: smaller numbers are everywhere, finding one proves nothing)
PRIVATE_VALUES = sorted({v for c in CASES for k, v in c.items() if k != "id" and v >= 100})
CAMPAIGN = "kernel_opt_minikern_private_triton_cpu_production"


def hits(data: bytes) -> list[str]:
    """Each private case id (anywhere, even inside a word) and, in a text file, each private value (as a
    number of its own; in binary data, such as the report's plot, digits occur by chance)."""
    text = data.decode("utf-8", errors="replace")
    found = [i for i in PRIVATE_IDS if i in text]
    text = re.sub(r"pytest-\d+", "pytest-N", text)  # pytest's own numbering of its temporary directories
    if b"\0" not in data[:8192]:
        found += [str(v) for v in PRIVATE_VALUES if re.search(rf"(?<![\w.]){v}(?![\w]|\.\d)", text)]
    return found


def audit(workspace: Path, repo: Path) -> dict[str, list[str]]:
    """Every file under the workspace but the checkpoint directory (outside every agent's reach, where the
    id mapping lives by design), and every git object of the campaign's repository."""
    leaks: dict[str, list[str]] = {}
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace)
        if rel.parts[0] == "checkpoints" or ".git" in rel.parts or not path.is_file() or path.is_symlink():
            continue
        found = hits(path.read_bytes())
        if found:
            leaks[str(rel)] = found
    listing = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects",
         "--batch-check=%(objectname) %(objecttype)"],
        capture_output=True, text=True, check=True,
    ).stdout
    objects = [line.split() for line in listing.splitlines() if line]
    assert len(objects) > 20  # the whole history is really being read
    for sha, kind in objects:
        command = ["ls-tree", "--name-only", sha] if kind == "tree" else ["cat-file", "-p", sha]
        body = subprocess.run(["git", "-C", str(repo), *command], capture_output=True, check=True).stdout
        found = hits(body)
        if found:
            leaks[f"git {kind} {sha}"] = found
    return leaks


def test_the_audit_finds_what_it_looks_for() -> None:
    """The audit is not vacuous: the task file itself is full of hits."""
    assert set(hits(TASK.read_bytes())) == {*PRIVATE_IDS, *map(str, PRIVATE_VALUES)}
    assert hits(b"\x89PNG\x00 1109 ") == [] and hits(b"\x00scored_q3z") == ["scored_q3z"]
    assert hits(b"/tmp/pytest-of-ci/pytest-1109/t0/runs") == [] and hits(b"/x/1109") == ["1109"]
    assert PRIVATE_VALUES == [1109, 1237]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_production_command_task_campaign_leaks_no_private_case(tmp_path: Path) -> None:
    operator = tmp_path / "operators" / "minikern"  # a copy: the campaign must not need the fixture's place
    ignore = shutil.ignore_patterns("__pycache__", "build", "*.so", "*.egg-info")
    shutil.copytree(FIXTURE, operator, ignore=ignore)
    workspace = tmp_path / "runs"
    argv = [
        sys.executable, "-m", "aka_graph", "run", "--op-dir", str(operator / TASK.name), "--platform", "cpu",
        "--framework", "triton", "--agent-cli", "replay", "--replay-script",
        str(operator / "replay_production.json"), "--optimization-mode", "production",  # V1: not for a tree
        "--max-iters", "1", "--fast-trials", "3", "--verify-repeats", "3", "--seeds", "1",
        "--workspace", str(workspace),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1450, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    root = workspace / CAMPAIGN
    ledger = Ledger(root / "records" / "ledger.sqlite")
    trials = [e.status for e in ledger.entries(episode=1, role="trial")]
    assert trials == ["COMPILE_ERROR", "INCORRECT", "PASS"]
    records = read_version_records(root)
    assert [(r.version, r.decision) for r in records] == [(0, "baseline"), (1, "promoted")]
    assert records[1].objective < records[0].objective
    policy = [(d.episode, d.decision) for d in ledger.decisions() if d.kind == "policy"]
    assert policy == [(1, "pass")]
    policy_files = [p for p in (root / "transcripts").rglob("*") if "policy" in str(p) and p.is_file()]
    reviewed = "".join(p.read_text() for p in policy_files)
    assert "+++ candidate/minikern/triton_ops.py" in reviewed  # the reviewer read the editable files' diff

    # the records name the scored case by an opaque id, the same one every time
    opaque = {p.id for r in records for p in r.performance}
    assert len(opaque) == 1 and re.fullmatch(r"w_[a-z]{12}", opaque.pop())
    mapping = workspace / "checkpoints" / f"{CAMPAIGN}.private" / "opaque_ids.json"
    assert set(json.loads(mapping.read_text())) == set(PRIVATE_IDS)
    assert stat.S_IMODE(mapping.stat().st_mode) == 0o600
    # the agents' copy of the task file has everything but the cases
    public = tomllib.loads((root / "op" / TASK.name).read_text())
    assert "cases" not in public and public["commands"]["performance"]["argv"][1] == "bench/bench.py"
    transcripts = list((root / "transcripts").rglob("*.jsonl"))
    assert len(transcripts) >= 4 and any("prompt" in t.read_text() for t in transcripts)

    submission = json.loads((root / "submission.json").read_text())  # covered by the audit below
    assert [s["path"] for s in submission["sources"]] == ["csrc/native.cpp", "minikern/triton_ops.py"]

    assert audit(workspace, root) == {}
    assert "Privacy check passed" in (root / "report" / "report.md").read_text()
