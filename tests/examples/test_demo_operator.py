"""The demo operator's candidates behave as the demo needs: checked against the reference on the CPU.

Without a GPU the kernels run under the Triton interpreter.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

EXAMPLE = Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "vq_nearest_code"


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: the kernels are decorated (module load) while TRITON_INTERPRET=1."""
    if not torch.cuda.is_available():
        monkeypatch.setenv("TRITON_INTERPRET", "1")


def _reference() -> Any:
    definition = json.loads((EXAMPLE / "definition.json").read_text())
    namespace: dict[str, Any] = {}
    exec(definition["reference"], namespace)
    return namespace["run"]


def _kernel(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"demo_{name}", EXAMPLE / "kernels" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _inputs(tokens: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x, codebook = torch.randn(tokens, 64, generator=gen), torch.randn(1024, 64, generator=gen)
    return x.to(DEVICE), codebook.to(DEVICE)


def _rows_matching(name: str, tokens: int, seed: int) -> float:
    x, codebook = _inputs(tokens, seed)
    out = torch.full((tokens, 64), float("nan"), device=DEVICE)  # poisoned, like the harness does
    _kernel(name).run(x, codebook, out)
    return (out == _reference()(x, codebook)).all(dim=1).float().mean().item()


def test_definition_and_workloads_are_sol_format() -> None:
    definition = json.loads((EXAMPLE / "definition.json").read_text())
    assert list(definition["inputs"]) == ["x", "codebook"] and list(definition["outputs"]) == ["quantized"]
    workloads = [json.loads(line) for line in (EXAMPLE / "workload.jsonl").read_text().splitlines()]
    assert len({w["uuid"] for w in workloads}) == len(workloads) >= 3
    assert all(set(w["inputs"]) == {"x", "codebook"} for w in workloads)


@pytest.mark.parametrize("name", ["fast", "slow"])
@pytest.mark.parametrize("tokens", [1, 45])
def test_fast_and_slow_candidates_match_the_reference_exactly(name: str, tokens: int) -> None:
    assert _rows_matching(name, tokens, seed=tokens) == 1.0


def test_incorrect_candidate_fails_on_most_rows() -> None:
    assert _rows_matching("incorrect", 64, seed=3) < 0.5


def test_replay_script_uses_each_candidate() -> None:
    script = json.loads((EXAMPLE / "replay.json").read_text())
    sources = {e["source"] for t in script["turns"] for e in t.get("edits", []) if "source" in e}
    assert sources == {"kernels/incorrect.py", "kernels/fast.py", "kernels/slow.py"}
    assert all((EXAMPLE / s).is_file() for s in sources)
