"""The default context carries the campaign's evaluation settings into every evaluation it makes."""

from __future__ import annotations

from pathlib import Path

from aka_graph.context import HarnessEvaluator, build_default_context
from aka_graph.state import CampaignConfig

EXAMPLE = Path(__file__).resolve().parents[1] / "aka_graph" / "examples" / "vq_nearest_code"


def test_blob_root_and_all_workloads_reach_the_evaluator(tmp_path: Path) -> None:
    config = CampaignConfig(
        op_dir=str(EXAMPLE),
        agent_cli="replay",
        replay_script=str(EXAMPLE / "replay.json"),
        blob_root=str(tmp_path),
        all_workloads=True,
        warm_evaluator=False,
    )
    evaluator = build_default_context(config).evaluator
    assert evaluator == HarnessEvaluator(blob_root=tmp_path.resolve(), all_workloads=True, warm=False)


def test_by_default_the_evaluator_is_warm_with_no_blob_root_and_the_cpu_subset() -> None:
    config = CampaignConfig(
        op_dir=str(EXAMPLE), agent_cli="replay", replay_script=str(EXAMPLE / "replay.json")
    )
    assert build_default_context(config).evaluator == HarnessEvaluator(warm=True)
