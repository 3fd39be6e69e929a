"""The demo operator's candidates behave as the demo needs: checked against the reference on the CPU.

Without a GPU the kernels run under the Triton interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
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


@pytest.mark.parametrize("tokens", [16, 45, 150])
def test_the_fast_kernels_gpu_plan_matches_the_reference_exactly(tokens: int) -> None:
    """fast.py's GPU plan (token blocks x codebook slices, then a pick kernel), run under the interpreter
    with the very tile sizes the GPU uses: the same nearest codes as the reference, masked tails too."""
    x, codebook = _inputs(tokens, seed=100 + tokens)
    out = torch.full((tokens, 64), float("nan"), device=DEVICE)
    _kernel("fast").run_sliced(x, codebook, out)
    assert torch.equal(out, _reference()(x, codebook))


def test_incorrect_candidate_fails_on_most_rows() -> None:
    assert _rows_matching("incorrect", 64, seed=3) < 0.5


def test_replay_script_uses_each_candidate() -> None:
    script = json.loads((EXAMPLE / "replay.json").read_text())
    sources = {e["source"] for t in script["turns"] for e in t.get("edits", []) if "source" in e}
    assert sources == {"kernels/incorrect.py", "kernels/fast.py", "kernels/slow.py"}
    assert all((EXAMPLE / s).is_file() for s in sources)


AOT_COMPILE = """
import importlib.util, sys, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
TILED = {"x_ptr": "*fp32", "cb_ptr": "*fp32", "out_ptr": "*fp32", "num_tokens": "i32",
         "K": "constexpr", "D": "constexpr", "BLOCK_T": "constexpr", "BLOCK_K": "constexpr"}
SLICE = {"x_ptr": "*fp32", "cb_ptr": "*fp32", "slice_min_ptr": "*fp32", "slice_idx_ptr": "*i32",
         "num_tokens": "i32", "D": "constexpr", "BLOCK_T": "constexpr", "BLOCK_K": "constexpr",
         "SLICE": "constexpr"}
PICK = {"slice_min_ptr": "*fp32", "slice_idx_ptr": "*i32", "cb_ptr": "*fp32", "out_ptr": "*fp32",
        "num_tokens": "i32", "D": "constexpr", "SLICES": "constexpr", "BLOCK_T": "constexpr"}
KERNELS = (
    ("slow.py", "_vq_brute_kernel", TILED, {"K": 1024, "D": 64, "BLOCK_T": 16, "BLOCK_K": 16}),
    ("fast.py", "_vq_slice_kernel", SLICE, {"D": 64, "BLOCK_T": 16, "BLOCK_K": 64, "SLICE": 128}),
    ("fast.py", "_vq_pick_kernel", PICK, {"D": 64, "SLICES": 8, "BLOCK_T": 32}),
)
for path, kernel, sig, consts in KERNELS:
    spec = importlib.util.spec_from_file_location(kernel, sys.argv[1] + "/" + path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, kernel)
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
    assert triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["cubin"]
    print(path, kernel, "compiled for sm_90")
"""


@pytest.mark.slow
def test_candidates_compile_for_an_h200_without_one(tmp_path: Path) -> None:
    """The GPU path (sm_90 tiles) lowers to a cubin with Triton's own ptxas: no GPU needed. In a fresh
    process, because triton imported under the interpreter cannot compile for a GPU afterwards."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", AOT_COMPILE, str(EXAMPLE / "kernels")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("compiled for sm_90") == 3
