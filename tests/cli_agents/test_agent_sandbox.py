"""An agent process sees its worktree and nothing else of the campaign.

A scripted CLI (a real process run through `CliBackend`, like claude or codex) tries to read every private
file of a production campaign from inside its worktree — by relative path (`../../results/...`,
`../../../checkpoints/...`) and by absolute path (the operator's own `shapes.json`, the ledger) — and must
fail on each, in both isolation modes, while it can still read and write its worktree and run Python.
Without isolation the same probe reads them all (so the test can fail).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import git
import pytest

from aka_graph.cli_agents.base import AgentRun, TokenUsage
from aka_graph.cli_agents.cli_backend import CliBackend
from aka_graph.cli_agents.sandbox import bwrap_works, userns_works
from aka_graph.cli_agents.settings import SessionSettings
from aka_graph.cli_agents.stream_base import StreamParser
from aka_graph.tools.records.privacy import agent_sandbox

PROBE = """#!{python}
import json, pathlib, sys
report = {{}}
for path in json.loads(sys.argv[1]):
    try:
        report[path] = pathlib.Path(path).read_text()[:40]
    except OSError as e:
        report[path] = "DENIED " + type(e).__name__
pathlib.Path("kernel.py").write_text("# written inside the sandbox\\n")
print(json.dumps({{"type": "result", "session_id": "probe", "text": json.dumps(report)}}))
"""


class ProbeParser(StreamParser):
    def handle(self, event: dict[str, Any]) -> bool:
        if event.get("type") == "result":
            self.session_id, self.final_text = event["session_id"], event["text"]
        return False

    def tokens(self) -> TokenUsage:
        return TokenUsage(accuracy="exact")


class ProbeCli(CliBackend):
    """A coding CLI whose 'model' is a script that tries to read the paths in its prompt."""

    name = "probe"
    settings_key = "PROBE"
    executables = ("probe",)

    def __init__(self, exe: Path) -> None:
        super().__init__(SessionSettings())
        self.exe = exe

    def executable(self) -> Path:
        return self.exe

    def build_argv(self, run: AgentRun, exe: Path, prompt: str, home: Path) -> tuple[list[str], str | None]:
        return [str(exe), prompt], None

    def cli_env(self, home: Path) -> dict[str, str]:
        return {"HOME": str(home)}

    def make_parser(self, run: AgentRun, home: Path) -> StreamParser:
        return ProbeParser()


def production_campaign(tmp_path: Path) -> dict[str, Path]:
    """The files of a production campaign an agent must never read, and its episode worktree."""
    op = tmp_path / "operators" / "rms"
    op.mkdir(parents=True)
    (op / "shapes.json").write_text('{"t777_h5120": {}}')
    workspace = tmp_path / "runs"
    root = workspace / "kernel_opt_rms_triton_cpu_production"
    repo = git.Repo.init(root, initial_branch="campaign")
    (root / "kernel.py").write_text("# v0\n")
    repo.index.add(["kernel.py"])
    repo.index.commit("v0")
    worktree = root / "episodes" / "1"
    repo.git.worktree("add", "-q", "-b", "episode/1", str(worktree), "campaign")
    files = {
        "scratch": workspace / "checkpoints" / f"{root.name}.problem" / "shapes.json",
        "ids": workspace / "checkpoints" / f"{root.name}.private" / "opaque_ids.json",
        "result": root / "results" / "v0" / "result.json",
        "ledger": root / "records" / "ledger.sqlite",
        "report": root / "report" / "report.md",
        "transcript": root / "transcripts" / "v1" / "replay.jsonl",
        "other_episode": root / "episodes" / "2" / "kernel.py",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("t777_h5120 private\n")
    return {**files, "op_shapes": op / "shapes.json", "op": op, "workspace": workspace, "root": root,
            "worktree": worktree}


def probe(tmp_path: Path, campaign: dict[str, Path], mode: str | None) -> dict[str, str]:
    exe = tmp_path / "bin" / "probe"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(PROBE.format(python=sys.executable))
    exe.chmod(0o755)
    worktree = campaign["worktree"]
    targets = [
        "../../results/v0/result.json",
        "../../../checkpoints/kernel_opt_rms_triton_cpu_production.problem/shapes.json",
        "../../../checkpoints/kernel_opt_rms_triton_cpu_production.private/opaque_ids.json",
        "../../records/ledger.sqlite",
        "../../report/report.md",
        "../../transcripts/v1/replay.jsonl",
        "../2/kernel.py",
        str(campaign["op_shapes"]),
        str(campaign["ledger"]),
        str(campaign["scratch"]),
        "kernel.py",
    ]
    sandbox = None
    if mode is not None:
        sandbox = agent_sandbox(campaign["workspace"], campaign["root"], campaign["op"], worktree, mode)
    run = AgentRun(role="implementer", prompt=json.dumps(targets), cwd=worktree, timeout_s=60,
                   transcript_dir=tmp_path / "transcript", sandbox=sandbox)
    result = ProbeCli(exe).run(run)
    assert result.ok, result.error
    return json.loads(result.final_text)


MODES = [
    pytest.param("bwrap", marks=pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here")),
    pytest.param("userns", marks=pytest.mark.skipif(not userns_works(), reason="no mount namespaces here")),
]


@pytest.mark.parametrize("mode", MODES)
def test_an_agent_cannot_read_any_private_file_of_the_campaign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("AKA_AGENT_HOME_ROOT", str(tmp_path / "homes"))
    campaign = production_campaign(tmp_path)
    report = probe(tmp_path, campaign, mode)
    private = {path: text for path, text in report.items() if path != "kernel.py"}
    assert private and all(text.startswith("DENIED") for text in private.values()), private
    assert report["kernel.py"] == "# v0\n"  # its own worktree stays readable
    assert (campaign["worktree"] / "kernel.py").read_text() == "# written inside the sandbox\n"
    assert (campaign["scratch"]).read_text() == "t777_h5120 private\n"  # hidden, not destroyed


def test_without_isolation_the_same_probe_reads_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKA_AGENT_HOME_ROOT", str(tmp_path / "homes"))
    report = probe(tmp_path, production_campaign(tmp_path), None)
    assert all(not text.startswith("DENIED") for text in report.values()), report


@pytest.mark.parametrize("mode", MODES)
def test_a_working_directory_inside_a_private_one_sees_only_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A V1 reviewer works in a copy of op/ under results/: the rest of results/ stays hidden."""
    monkeypatch.setenv("AKA_AGENT_HOME_ROOT", str(tmp_path / "homes"))
    campaign = production_campaign(tmp_path)
    review = campaign["root"] / "results" / "e0" / "review_claude"
    (review / "op").mkdir(parents=True)
    (review / "op" / "reference.py").write_text("public\n")
    exe = tmp_path / "bin" / "probe"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(PROBE.format(python=sys.executable))
    exe.chmod(0o755)
    sandbox = agent_sandbox(campaign["workspace"], campaign["root"], campaign["op"], review, mode)
    targets = ["op/reference.py", "../../v0/result.json", str(campaign["result"]), str(campaign["ledger"])]
    run = AgentRun(role="reviewer:claude", prompt=json.dumps(targets), cwd=review, timeout_s=60,
                   transcript_dir=tmp_path / "transcript", sandbox=sandbox)
    report = json.loads(ProbeCli(exe).run(run).final_text)
    assert report.pop("op/reference.py") == "public\n"
    assert all(text.startswith("DENIED") for text in report.values()), report
