"""Production mode's view of a command task (aka_graph/tasks/private_cases.py and its use by
tools/records/privacy.py): the cases are the private shapes, the agents' copy of the task file has none,
and the scanner searches what could only have come from the cases."""

from __future__ import annotations

import tomllib
from pathlib import Path

from aka_graph.tasks.campaign import install_task
from aka_graph.tasks.loader import load_task
from aka_graph.tasks.private_cases import case_values, public_task_text
from aka_graph.tools.records.privacy import PrivateShapes, campaign_privacy
from aka_graph.tools.records.workspace import CampaignWorkspace
from tests.tasks.conftest import FIXTURE

PRIVATE_TASK = FIXTURE / "aka_task_private.toml"


def test_the_cases_of_a_command_task_are_its_private_shapes() -> None:
    shapes = PrivateShapes.of_operator(PRIVATE_TASK)
    assert shapes.values == {"smoke_k5q": (7, 45), "ragged_m9x": (13, 1237), "scored_q3z": (71, 1109)}
    assert shapes.distinctive_values() == {1109, 1237}
    assert case_values(load_task(FIXTURE)) == {"tiny": (5, 33), "rows64": (64, 256), "rows128": (128, 256)}


def test_the_public_task_file_has_everything_but_the_cases() -> None:
    loaded = load_task(PRIVATE_TASK)
    public = public_task_text(loaded)
    data, original = tomllib.loads(public), tomllib.loads(PRIVATE_TASK.read_text())
    assert "cases" not in data and not any(case in public for case in ("smoke_k5q", "scored_q3z", "1109"))
    for key in ("name", "editable", "scratch", "stale_paths", "build_outputs", "rebuild_env", "performance"):
        assert data[key] == original[key], key
    for phase in ("build", "correctness", "performance"):
        assert data["commands"][phase]["argv"] == original["commands"][phase]["argv"]


def test_production_workspaces_get_the_public_copy(tmp_path: Path) -> None:
    loaded = load_task(PRIVATE_TASK)
    production = CampaignWorkspace.open_or_create(tmp_path, loaded.name, "triton", "cpu", True)
    install_task(production, loaded)
    assert "cases" not in tomllib.loads((production.root / "op" / PRIVATE_TASK.name).read_text())
    leaderboard = CampaignWorkspace.open_or_create(tmp_path, loaded.name, "triton", "cpu", False)
    install_task(leaderboard, loaded)
    assert (leaderboard.root / "op" / PRIVATE_TASK.name).read_text() == PRIVATE_TASK.read_text()


def test_the_scanner_ignores_what_the_tree_itself_says(tmp_path: Path) -> None:
    """minikern's own files say "tiny" (its docstring): a case named so is no evidence of a leak, while a
    case id or value found nowhere in the tree is."""
    loaded = load_task(FIXTURE)  # cases tiny, rows64, rows128
    production = CampaignWorkspace.open_or_create(tmp_path, loaded.name, "triton", "cpu", True)
    install_task(production, loaded)
    ids, scanner = campaign_privacy(tmp_path, production.root.name, FIXTURE)
    assert set(ids.mapping) == {"tiny", "rows64", "rows128"}
    assert scanner.scan("minikern: a tiny kernel library", "notes") == []
    assert scanner.scan("special-case rows128 here", "notes") == [
        f"private shape id of {ids.opaque('rows128')} in notes"
    ]
    _, private_scanner = campaign_privacy(tmp_path, production.root.name, PRIVATE_TASK)
    assert private_scanner.scan("if cols == 1109:", "kernel") != []


def test_in_binary_files_only_ids_are_evidence(tmp_path: Path) -> None:
    """Digits turn up by chance in compressed bytes (the report's plot held "333" once): a private value
    there is noise, a private id is still a leak."""
    loaded = load_task(PRIVATE_TASK)
    production = CampaignWorkspace.open_or_create(tmp_path, loaded.name, "triton", "cpu", True)
    install_task(production, loaded)
    ids, scanner = campaign_privacy(tmp_path, production.root.name, PRIVATE_TASK)
    files = tmp_path / "files"
    files.mkdir()
    (files / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00 1109 \x00")
    assert scanner.scan_files(files) == []
    (files / "notes.txt").write_text("rows 1109\n")
    (files / "blob.bin").write_bytes(b"\x00 scored_q3z \x00")
    assert sorted(scanner.scan_files(files)) == [
        f"a private shape value of {ids.opaque('scored_q3z')} in notes.txt",
        f"private shape id of {ids.opaque('scored_q3z')} in blob.bin",
    ]
