"""Every shared SOL-ExecBench fixture, and a native Atrex-Bench operator, evaluates end to end through
the full pipeline on CPU (the reference wrapped as the candidate; small workloads where the real ones
would take minutes under the interpreter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SOL_FIXTURES
from tests.tools.evaluator.harness.test_gates import run_harness, write_kernel

SMALL_WORKLOAD = {
    "rmsnorm": "33bf737d-3b37-4e38-be80-ea39b4b46ae6",
    "nemotron_rms_norm": "06179a8b-b919-5fe7-bd31-97a42e4f2da2",
    "flux_rope": "3378dd76-6148-5997-ba6f-8b790a13548a",
    "custom_inputs_matmul": None,  # all three
    "gemma3_swiglu": "c8b68cb3-33f7-5136-aa70-2fbbcca2fbd5",  # 1x128 tokens, 2 x 24576x3072 weights
}


def reference_as_candidate(op_dir: Path) -> str:
    definition = json.loads((op_dir / "definition.json").read_text())
    return definition["reference"] + "\n\nDESTINATION_PASSING_STYLE = False\n"


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(SMALL_WORKLOAD))
def test_fixture_evaluates_end_to_end_with_its_reference_as_candidate(fixture: str, tmp_path: Path) -> None:
    op_dir = SOL_FIXTURES / fixture
    kernel = write_kernel(tmp_path, reference_as_candidate(op_dir))
    shape = SMALL_WORKLOAD[fixture]
    res = run_harness(tmp_path, op_dir, kernel, shape_ids=[shape] if shape else None, timeout_s=600)
    assert res["status"] == "PASS", res["message"]
    assert res["workloads"] and all(w["status"] == "PASS" and w["latency_us"] > 0 for w in res["workloads"])
    assert res["operator"] == json.loads((op_dir / "definition.json").read_text())["name"]
    assert all(w["max_abs_error"] == 0.0 for w in res["workloads"])  # the same code on the same inputs


NATIVE_REFERENCE = """
import torch

class Model(torch.nn.Module):
    def __init__(self, hidden, scale=1.0):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.scale = scale

    def forward(self, x):
        return torch.tanh(self.proj(x)) * self.scale
"""

NATIVE_CANDIDATE = """
import torch

class Model(torch.nn.Module):
    '''Same parameters as the reference (loaded from its state_dict), a different formulation.'''

    def __init__(self, hidden, scale=1.0):
        super().__init__()
        self.proj = torch.nn.Linear(hidden, hidden, bias=False)
        self.scale = scale

    def forward(self, x):
        return torch.tanh(x @ self.proj.weight.t()) * self.scale
"""


def _native_op(root: Path) -> Path:
    op = root / "native_op"
    op.mkdir()
    (op / "reference.py").write_text(NATIVE_REFERENCE)
    (op / "input.py").write_text(
        "import torch\n\ndef _make_inputs(rows, hidden, device=None):\n"
        "    return [torch.randn(rows, hidden, device=device)]\n"
    )
    shapes = {
        f"r{r}_h{h}": {"init_kwargs": {"hidden": h, "scale": 2.0}, "input_kwargs": {"rows": r, "hidden": h}}
        for r, h in ((1, 16), (7, 32), (33, 64))
    }
    (op / "shapes.json").write_text(json.dumps(shapes))
    (op / "metadata.json").write_text("{hidden: never read")
    return op


@pytest.mark.slow
def test_native_operator_with_a_model_candidate_evaluates_every_shape(tmp_path: Path) -> None:
    op = _native_op(tmp_path)
    res = run_harness(tmp_path, op, write_kernel(tmp_path, NATIVE_CANDIDATE), shape_ids=None)
    assert res["status"] == "PASS", res["message"]
    assert res["format"] == "native" and sorted(w["id"] for w in res["workloads"]) == [
        "r1_h16",
        "r33_h64",
        "r7_h32",
    ]


@pytest.mark.slow
def test_native_model_with_wrong_math_is_incorrect(tmp_path: Path) -> None:
    op = _native_op(tmp_path)
    wrong = NATIVE_CANDIDATE.replace("torch.tanh(", "torch.sigmoid(")
    res = run_harness(tmp_path, op, write_kernel(tmp_path, wrong), shape_ids=["r7_h32"])
    assert res["status"] == "INCORRECT", res["message"]


@pytest.mark.slow
def test_private_shapes_mode_withholds_every_candidate_controlled_message(tmp_path: Path) -> None:
    op = _native_op(tmp_path)
    leaky = NATIVE_CANDIDATE.replace(
        "        self.scale = scale\n", "        raise RuntimeError(f'SECRET {hidden}')\n", 1
    )
    res = run_harness(
        tmp_path, op, write_kernel(tmp_path, leaky), shape_ids=["r7_h32"], extra=["--private-shapes"]
    )
    assert res["status"] == "RUNTIME_ERROR"
    text = json.dumps({k: v for k, v in res.items() if not k.startswith("_")})
    assert "SECRET" not in text and "details withheld" in res["message"]
