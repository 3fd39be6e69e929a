"""finish's final policy check (production): private shape ids or hidden files anywhere in history fail it."""

from __future__ import annotations

import json
from pathlib import Path

from campaign_fakes import make_context, write_fake_native_operator
from langgraph.runtime import Runtime

from aka_graph.nodes.finish import final_policy_check
from aka_graph.nodes.preprocess import preprocess
from aka_graph.state import CampaignConfig, CampaignState
from aka_graph.tools.records.workspace import CampaignWorkspace


def production_workspace(tmp_path: Path) -> tuple[CampaignWorkspace, Path]:
    op = write_fake_native_operator(tmp_path / "rms")
    config = CampaignConfig(
        op_dir=str(op),
        agent_cli="fake",
        workspace=str(tmp_path / "ws"),
        platform="cpu",
        optimization_mode="production",
    )
    preprocess(CampaignState(config=config), Runtime(context=make_context(config)))
    return CampaignWorkspace.open_or_create(tmp_path / "ws", "rms", "triton", "cpu", True), op


def opaque_ids(tmp_path: Path, ws: CampaignWorkspace) -> dict[str, str]:
    mapping = tmp_path / "ws" / "checkpoints" / f"{ws.root.name}.private" / "opaque_ids.json"
    return json.loads(mapping.read_text())


def test_a_clean_history_passes(tmp_path: Path) -> None:
    ws, op = production_workspace(tmp_path)
    assert final_policy_check(ws, op) == []


def test_a_private_shape_id_anywhere_in_history_fails_even_if_deleted_later(tmp_path: Path) -> None:
    ws, op = production_workspace(tmp_path)
    (ws.root / "plans" / "notes.md").write_text("tuned for private_shape_2\n")
    ws.commit(["plans/notes.md"], "notes")
    (ws.root / "plans" / "notes.md").unlink()
    ws.commit(["plans/notes.md"], "remove notes")
    ids = opaque_ids(tmp_path, ws)
    (finding,) = final_policy_check(ws, op)
    assert finding.startswith(f"private shape id of {ids['private_shape_2']} in git blob ")
    assert "private_shape_2" not in finding  # the finding itself names the opaque id only


def test_a_private_shape_value_in_history_fails_too(tmp_path: Path) -> None:
    ws, op = production_workspace(tmp_path)
    (ws.root / "plans" / "notes.md").write_text("if n == 101: use the tuned path\n")
    ws.commit(["plans/notes.md"], "notes")
    ids = opaque_ids(tmp_path, ws)
    expected = f"a private shape value of {ids['private_shape_1']} in "
    assert any(f.startswith(expected) for f in final_policy_check(ws, op))


def test_a_committed_hidden_file_fails(tmp_path: Path) -> None:
    ws, op = production_workspace(tmp_path)
    (ws.root / "plans" / "metadata.json").write_text("{}")
    ws.commit(["plans/metadata.json"], "oops")
    assert final_policy_check(ws, op) == ["metadata.json committed"]
