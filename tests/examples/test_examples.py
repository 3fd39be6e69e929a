"""The operators shipped in aka_graph/examples/ are what the README's first-hour examples point at: they
load in their formats, the README never points outside the package, and the documented LangGraph HTTP
input is a valid `CampaignInput` whose paths exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aka_graph.state import CampaignInput
from aka_graph.target import operator_identity

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "aka_graph" / "examples"
README = (REPO / "README.md").read_text()


@pytest.mark.parametrize(
    ("name", "op_name", "op_format"),
    [
        ("vq_nearest_code", "vq_nearest_code_d64_k1024", "sol"),
        ("rmsnorm", "rmsnorm_h4096_bf16", "sol"),
        ("swiglu_native", "swiglu_native", "native"),
    ],
)
def test_example_operators_load_in_their_format(name: str, op_name: str, op_format: str) -> None:
    assert operator_identity(EXAMPLES / name) == (op_name, op_format)
    assert (EXAMPLES / name / "kernels").is_dir()  # each ships a first candidate


def test_the_readme_points_only_at_operators_shipped_with_the_package() -> None:
    assert "../shared" not in README
    op_dirs = re.findall(r"aka_graph run --op-dir (\S+)", README)
    assert op_dirs and all((REPO / d).is_dir() for d in op_dirs), op_dirs


def test_the_documented_langgraph_input_is_valid_and_its_paths_exist() -> None:
    body = json.loads((EXAMPLES / "studio_input.json").read_text())
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", README, re.S)]
    assert body in blocks  # the README shows exactly the file the curl example posts
    assert body["assistant_id"] == json.loads((REPO / "langgraph.json").read_text())["graphs"].popitem()[0]
    config = CampaignInput.model_validate(body["input"]).config
    assert (REPO / config.op_dir / "definition.json").is_file()
    assert config.replay_script is not None and (REPO / config.replay_script).is_file()
