"""The `--framework cuda` campaign on CPU, everything up to the build: the demo's replay script parses and
names files that exist, its kernels are pure CUDA for the policy's purity check, the V1 prompt names the
CUDA files, and a whole campaign (the real replay agent, the fake evaluator standing in for nvcc and the
GPU) writes V1 as kernel.cu + solution.json, pins it, promotes episode 1's kernel.cu onto the campaign
branch and submits it. The GPU run of the same demo: tests/gpu/test_cuda_campaign_gpu.py."""

from __future__ import annotations

import json
from pathlib import Path

import git
from campaign_fakes import FakeEvaluator, make_context

from aka_graph.cli_agents.replay import ReplayBackend, ReplayScript
from aka_graph.frameworks import framework_purity
from aka_graph.nodes.prompts import implement_prompt, v1_prompt
from aka_graph.progress import Progress
from aka_graph.runner import run_campaign
from aka_graph.state import CampaignConfig, CampaignState
from aka_graph.target import CampaignTarget
from aka_graph.tools.evaluator.harness.policy import scan_kernel_dir
from aka_graph.tools.records.layout import CampaignLayout
from aka_graph.tools.records.memory import read_version_records

EXAMPLE = Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "rmsnorm_cuda"
REPLAY = EXAMPLE / "replay_cuda.json"


def cuda_target(op_dir: Path = EXAMPLE) -> CampaignTarget:
    return CampaignTarget(
        op_dir=str(op_dir.resolve()), op_name="rmsnorm_h2048_bf16", op_format="sol", platform="cpu",
        arch="cpu", frameworks=("cuda",), framework="cuda", production=False,
    )


def test_the_replay_script_parses_and_every_source_it_copies_exists() -> None:
    script = ReplayScript.model_validate_json(REPLAY.read_text())
    sources = [e.source for t in script.turns for e in t.edits if e.source]
    assert sources and all((EXAMPLE / s).is_file() for s in sources)
    v1 = next(t for t in script.turns if t.labels == {"episode": "v1"})
    assert {e.path for e in v1.edits} == {"kernel.cu", "solution.json"}
    solution = json.loads((EXAMPLE / "kernels" / "solution.json").read_text())
    assert solution["spec"]["languages"] == ["cuda_cpp"]
    assert solution["spec"]["entry_point"] == "kernel.cu::run"
    assert solution["definition"] == json.loads((EXAMPLE / "definition.json").read_text())["name"]


def test_the_demo_kernels_are_pure_cuda_and_a_torch_version_is_not(tmp_path: Path) -> None:
    for name in ("baseline.cu", "fast.cu"):
        candidate = tmp_path / name.removesuffix(".cu")
        candidate.mkdir()
        (candidate / "kernel.cu").write_text((EXAMPLE / "kernels" / name).read_text())
        (candidate / "solution.json").write_text((EXAMPLE / "kernels" / "solution.json").read_text())
        assert framework_purity("cuda", candidate) == []
        assert scan_kernel_dir(candidate) == []  # the harness's static source policy lets it through
    cheat = tmp_path / "cheat"
    cheat.mkdir()
    (cheat / "kernel.cu").write_text(
        "#include <torch/extension.h>\n"
        "void run(const torch::Tensor& x, const torch::Tensor& w, torch::Tensor& y) {\n"
        "  y.copy_(x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * w);\n}\n"
    )
    problems = framework_purity("cuda", cheat)
    assert problems[0].startswith("not a CUDA C++ kernel")
    assert any("kernel.cu:3: ATen op torch::rsqrt(...)" in p for p in problems)


def test_the_v1_and_episode_prompts_name_the_cuda_files() -> None:
    state = CampaignState(
        config=CampaignConfig(op_dir=str(EXAMPLE), framework="cuda"), target=cuda_target(),
        episode=1, episode_framework="cuda",
    )
    v1 = v1_prompt(state, ["a", "b"])
    assert "in kernel.cu and solution.json" in v1 and "Edit only kernel.cu and solution.json" in v1
    assert "__global__ CUDA kernels" in v1 and "kernel.cu must define run(" in v1 and "`cuda` skill" in v1
    episode = implement_prompt(state, 1)
    assert "change to kernel.cu and solution.json (cuda)" in episode and "kernel.py must" not in episode


def timing(text: str) -> tuple[str, float]:
    """Deterministic stand-in for the GPU: the one-pass kernel beats the warp-per-row one, both beat V0."""
    if "rmsnorm_row_vec" in text:
        return "PASS", 60.0
    if "rmsnorm_warp_per_row" in text:
        return "PASS", 100.0
    return "PASS", 150.0


def test_a_cuda_campaign_pins_a_cuda_v1_and_promotes_a_cuda_episode(tmp_path: Path) -> None:
    config = CampaignConfig(
        op_dir=str(EXAMPLE), framework="cuda", agent_cli="replay", replay_script=str(REPLAY), platform="cpu",
        workspace=str(tmp_path / "ws"), v1="always", max_iters=1, fast_episodes=1, fast_trials=1,
    )
    context = make_context(config)
    context.agent = ReplayBackend(REPLAY)
    context.evaluator = FakeEvaluator(context.sandbox, classify=timing)
    context.target = cuda_target()
    outcome = run_campaign(config, context, progress=Progress.for_terminal(quiet=True))
    assert outcome.values["failed"] is None
    root = Path(outcome.values["workspace_root"])
    records = read_version_records(root)
    assert [(r.version, r.decision, r.framework) for r in records] == [
        (0, "baseline", "pytorch"), (1, "pinned", "cuda"), (2, "promoted", "cuda")]
    # what was evaluated and frozen is the CUDA candidate only (no kernel.py beside it)
    frozen = CampaignLayout(root).frozen_version(2)
    assert sorted(p.name for p in frozen.iterdir()) == ["kernel.cu", "solution.json"]
    assert "rmsnorm_row_vec" in (frozen / "kernel.cu").read_text()
    # the campaign branch holds the promoted kernel.cu and the V1 solution.json
    repo = git.Repo(root)
    assert "rmsnorm_row_vec" in repo.git.show("HEAD:kernel.cu")
    assert json.loads(repo.git.show("HEAD:solution.json"))["spec"]["entry_point"] == "kernel.cu::run"
    submission = json.loads((root / "submission.json").read_text())
    assert submission["spec"]["languages"] == ["cuda_cpp"]
    assert [s["path"] for s in submission["sources"]] == ["kernel.cu"]
    assert "rmsnorm_row_vec" in submission["sources"][0]["content"]
