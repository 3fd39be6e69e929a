"""submission.json inlines every source and carries the SOL solution spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aka_graph.tools.records.submission import SubmissionError, write_submission
from aka_graph.tools.records.workspace import CampaignWorkspace

EXAMPLE = Path(__file__).resolve().parents[3] / "aka_graph" / "examples" / "vq_nearest_code"


def test_triton_kernel_is_inlined_with_its_spec(tmp_path: Path) -> None:
    ws = CampaignWorkspace.open_or_create(tmp_path, "vq", "triton", "H200", False)
    kernel_dir = tmp_path / "incumbent"
    (kernel_dir / "__pycache__").mkdir(parents=True)
    (kernel_dir / "kernel.py").write_text((EXAMPLE / "kernels" / "fast.py").read_text())
    (kernel_dir / "helpers.py").write_text("BLOCK = 64\n")
    (kernel_dir / "__pycache__" / "kernel.cpython-311.pyc").write_bytes(b"\0")
    path = write_submission(ws.root, EXAMPLE, kernel_dir)
    sub = json.loads(path.read_text())
    assert path == ws.root / "submission.json"
    assert sub["definition"] == "vq_nearest_code_d64_k1024" and sub["author"] == "aka_graph"
    assert sub["spec"] == {"languages": ["triton"], "target_hardware": ["H200"],
                           "entry_point": "kernel.py::run", "dependencies": [],
                           "destination_passing_style": True}
    assert [s["path"] for s in sub["sources"]] == ["helpers.py", "kernel.py"]
    assert sub["sources"][1]["content"] == (kernel_dir / "kernel.py").read_text()


def test_solution_json_of_the_kernel_is_respected(tmp_path: Path) -> None:
    kernel_dir = tmp_path / "v0"
    kernel_dir.mkdir()
    (kernel_dir / "kernel.py").write_text("import torch\ndef run(x, codebook):\n    return x\n")
    (kernel_dir / "solution.json").write_text(json.dumps({
        "name": "vq_v0_reference", "author": "aka_graph (verbatim reference)",
        "spec": {"languages": ["pytorch"], "entry_point": "kernel.py::run",
                 "destination_passing_style": False}}))
    sub = json.loads(write_submission(tmp_path, EXAMPLE, kernel_dir, target_hardware=["B200"]).read_text())
    assert (sub["name"], sub["author"]) == ("vq_v0_reference", "aka_graph (verbatim reference)")
    assert sub["spec"]["destination_passing_style"] is False and sub["spec"]["target_hardware"] == ["B200"]


def test_non_sol_operator_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "kernel.py").write_text("")
    with pytest.raises(SubmissionError, match=r"definition\.json"):
        write_submission(tmp_path, tmp_path, tmp_path / "k")
