"""Each gate of the harness, fail-closed, with a broken candidate it catches: compile, correctness
(wrong values, shape, dtype, NaN, all zeros), crash, hang (per-call watchdog); the honest reference and
a real Triton kernel under the interpreter pass; compare mode interleaves kernels in one process.

Every run goes through `python -m harness` in a fresh job directory, as a sandbox job runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from tests.conftest import REPO_ROOT, SOL_FIXTURES

HARNESS_DIR = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
RMSNORM = SOL_FIXTURES / "rmsnorm"
BATCH1 = "864d596c-a930-4fc4-b241-02e6a06e92cb"
BATCH7 = "33bf737d-3b37-4e38-be80-ea39b4b46ae6"

HONEST_DPS = """
import torch

def run(hidden_states, weight, output):
    x = hidden_states.float()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float()
    output.copy_(y.to(output.dtype))
"""

TRITON_RMSNORM = """
import torch
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, n_rows, N: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, N)
    mask = (rows < n_rows)[:, None]
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=1) / N + 1e-5)
    w = tl.load(w_ptr + cols).to(tl.float32)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], (x * inv[:, None] * w[None, :]).to(tl.bfloat16),
             mask=mask)


def run(hidden_states, weight, output):
    n_rows, n = hidden_states.shape
    _rms[(triton.cdiv(n_rows, 8),)](hidden_states.contiguous(), weight, output, n_rows, N=n, ROWS=8)
"""


def write_kernel(root: Path, source: str, name: str = "kernel") -> Path:
    kdir = root / name
    kdir.mkdir(parents=True, exist_ok=True)
    (kdir / "kernel.py").write_text(source)
    return kdir


def run_harness(
    tmp_path: Path,
    op_dir: Path,
    kernels: Path | dict[str, Path],
    *,
    shape_ids: list[str] | None,
    seeds: int = 1,
    extra: list[str] | None = None,
    timeout_s: float = 300,
) -> dict[str, Any]:
    """`python -m harness evaluate` (one kernel dir) or `compare` (a dict) in a fresh job directory."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(op_dir, job / "op")
    if isinstance(kernels, dict):
        argv = ["compare"]
        for label, path in kernels.items():
            shutil.copytree(path, job / f"k_{label}")
            argv += ["--kernel-dir", f"{label}=k_{label}"]
    else:
        shutil.copytree(kernels, job / "kernel")
        argv = ["evaluate", "--kernel-dir", "kernel"]
    argv = [
        sys.executable,
        "-m",
        "harness",
        *argv,
        "--op-dir",
        "op",
        "--out",
        "result.json",
        "--seeds",
        str(seeds),
        "--device",
        "cpu",
        *(extra or []),
    ]
    for sid in shape_ids or []:
        argv += ["--shape-id", sid]
    (job / "tmp").mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(job),
        "TMPDIR": str(job / "tmp"),
        "PYTHONPATH": ".",
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=timeout_s)
    out = job / "result.json"
    assert out.is_file(), f"no result.json (exit {proc.returncode})\n{proc.stderr[-3000:]}"
    data = json.loads(out.read_text())
    if not isinstance(kernels, dict):
        EvaluationResult.model_validate(data)
    data["_exit"], data["_stderr"] = proc.returncode, proc.stderr
    return data


def evaluate_source(tmp_path: Path, source: str, shape_ids: list[str] | None = None, **kw: Any) -> dict:
    return run_harness(
        tmp_path, RMSNORM, write_kernel(tmp_path, source), shape_ids=shape_ids or [BATCH7], **kw
    )


@pytest.mark.slow
def test_real_triton_kernel_passes_under_the_interpreter_with_three_seeds(tmp_path: Path) -> None:
    res = evaluate_source(tmp_path, TRITON_RMSNORM, [BATCH1, BATCH7], seeds=3)
    assert res["status"] == "PASS", res["message"]
    assert res["_exit"] == 0
    assert res["timing_method"] == "host_interpreter" and res["authoritative"] is False
    assert len(res["seeds"]) == 3  # 1 random + 1 at another scale + 1 edge/interior mix
    assert sorted(res["seed_scales"]) == [1.0, 1.0, 2.0] and len(set(res["seeds"])) == 3
    for w in res["workloads"]:
        assert w["status"] == "PASS" and w["latency_us"] > 0 and w["reference_latency_us"] > 0
        assert w["sol_bound_us"] is None  # no speed of light on a CPU
    assert "PASS" in res["_stderr"] and "lat_us" in res["_stderr"]  # the human table


RETURNING = HONEST_DPS.replace("def run(hidden_states, weight, output):", "def run(hidden_states, weight):")
RETURNING = (
    RETURNING.replace("output.copy_(y.to(output.dtype))", "return y")
    + "\nDESTINATION_PASSING_STYLE = False\n"
)

BROKEN: dict[str, str] = {
    "triton_control": TRITON_RMSNORM,
    "syntax_error": "def run(x, w, out:\n    pass\n",
    "import_error": "import no_such_module_xyz\n" + HONEST_DPS,
    "wrong_values": HONEST_DPS.replace("+ 1e-5)", "+ 1e-5) * 1.05"),
    "wrong_dtype": RETURNING,
    "wrong_shape": RETURNING.replace("return y", "return y.to(torch.bfloat16)[:, :-1]"),
    "wrong_count": RETURNING.replace("return y", "return y.to(torch.bfloat16), y"),
    "nan": HONEST_DPS.replace("output.copy_(", "y[0, 0] = float('nan'); output.copy_("),
    "all_zeros": "def run(hidden_states, weight, output):\n    output.zero_()\n",
    "leaves_poison": "def run(hidden_states, weight, output):\n    pass\n",
    "raises": "def run(x, w, out):\n    raise ValueError('boom')\n",
    "hard_exit": "import os\ndef run(x, w, out):\n    os._exit(3)\n",
}


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("broken")
    kernels = {name: write_kernel(root / "src", src, name) for name, src in BROKEN.items()}
    res = run_harness(
        root,
        RMSNORM,
        kernels,
        shape_ids=[BATCH1, BATCH7],
        extra=["--pattern", "A", "--repeats", "1", "--no-source-policy"],
    )
    return res["kernels"]


def _verdict(broken: dict[str, dict[str, Any]], name: str, status: str, words: str) -> dict[str, Any]:
    res = broken[name]
    assert res["status"] == status, f"{name}: {res['status']} {res['message'][:800]}"
    assert words in res["message"], f"{name}: {words!r} not in {res['message'][:800]!r}"
    assert res["summary"]["objective"] is None and res["authoritative"] is False
    assert all(w["latency_us"] is None for w in res["workloads"]), "a failed kernel must never be timed"
    return res


@pytest.mark.slow
def test_a_real_triton_kernel_passes_beside_the_broken_ones(broken: dict[str, dict[str, Any]]) -> None:
    assert broken["triton_control"]["status"] == "PASS", broken["triton_control"]["message"]


@pytest.mark.slow
def test_syntax_and_import_errors_are_compile_errors(broken: dict[str, dict[str, Any]]) -> None:
    _verdict(broken, "syntax_error", "COMPILE_ERROR", "SyntaxError")
    _verdict(broken, "import_error", "COMPILE_ERROR", "no_such_module_xyz")


@pytest.mark.slow
def test_wrong_values_are_incorrect_and_never_timed(broken: dict[str, dict[str, Any]]) -> None:
    _verdict(broken, "wrong_values", "INCORRECT", "within atol")


@pytest.mark.slow
def test_wrong_shape_dtype_or_output_count_are_incorrect(broken: dict[str, dict[str, Any]]) -> None:
    _verdict(broken, "wrong_dtype", "INCORRECT", "dtype torch.float32 != expected torch.bfloat16")
    _verdict(broken, "wrong_shape", "INCORRECT", "shape (1, 4095) != expected (1, 4096)")
    _verdict(broken, "wrong_count", "INCORRECT", "returned 2 outputs")


@pytest.mark.slow
def test_nan_all_zero_and_untouched_poisoned_outputs_are_incorrect(broken: dict[str, dict[str, Any]]) -> None:
    _verdict(broken, "nan", "INCORRECT", "NaN")
    _verdict(broken, "all_zeros", "INCORRECT", "all zeros")
    _verdict(broken, "leaves_poison", "INCORRECT", "non-finite")


@pytest.mark.slow
def test_exceptions_and_hard_exits_are_runtime_errors(broken: dict[str, dict[str, Any]]) -> None:
    _verdict(broken, "raises", "RUNTIME_ERROR", "boom")
    _verdict(broken, "hard_exit", "RUNTIME_ERROR", "died")


@pytest.mark.slow
def test_a_hanging_call_is_a_timeout_from_the_watchdog(tmp_path: Path) -> None:
    res = evaluate_source(
        tmp_path,
        "import time\ndef run(x, w, out):\n    time.sleep(600)\n",
        extra=["--call-timeout", "2"],
        timeout_s=120,
    )
    assert res["status"] == "TIMEOUT", res["message"]
    assert "watchdog" in res["message"]


@pytest.mark.slow
def test_compare_mode_interleaves_kernels_abba_in_one_process(tmp_path: Path) -> None:
    a = write_kernel(tmp_path, HONEST_DPS, "a")
    b = write_kernel(tmp_path, HONEST_DPS.replace("x.pow(2)", "(x * x)"), "b")
    res = run_harness(
        tmp_path,
        RMSNORM,
        {"inc": a, "cand": b},
        shape_ids=[BATCH1],
        extra=["--pattern", "ABBA", "--repeats", "2"],
    )
    assert res["schema"] == "aka_graph.comparison.v1" and res["status"] == "PASS", res["message"]
    assert [r["label"] for r in res["rounds"]] == ["inc", "cand", "cand", "inc"] * 2
    assert [r["repeat"] for r in res["rounds"]] == [0] * 4 + [1] * 4
    assert all(BATCH1 in r["latency_us"] for r in res["rounds"])
    assert set(res["kernels"]) == {"inc", "cand"}
    for kres in res["kernels"].values():
        EvaluationResult.model_validate(kres)


@pytest.mark.slow
def test_sol_bound_above_the_measured_time_is_a_reward_hack(tmp_path: Path) -> None:
    table = tmp_path / "peaks.json"
    table.write_text(
        json.dumps(
            [
                {
                    "name": "TOY",
                    "arch": "sm_0",
                    "vendor": "test",
                    "datasheet_bw": 1.0,
                    "datasheet_tflops": {"bf16": 1e-9, "fp32": 1e-9},
                    "l2_bytes": 1024,
                }
            ]
        )
    )
    res = evaluate_source(tmp_path, HONEST_DPS, extra=["--peak-table", str(table), "--gpu-spec", "TOY"])
    assert res["status"] == "REWARD_HACK", res["message"]
    assert "below the physical bound" in res["message"]
    w = res["workloads"][0]
    assert w["bytes_moved"] == 7 * 4096 * 2 * 2 + 4096 * 2


@pytest.mark.slow
def test_unknown_gpu_is_an_explicit_error_never_a_guess(tmp_path: Path) -> None:
    res = evaluate_source(tmp_path, HONEST_DPS, extra=["--gpu-spec", "Z9000"])
    assert res["status"] == "INFRA_ERROR" and "not in the peak table" in res["message"]


@pytest.mark.parametrize(("asked", "expected"), [(1, 3), (3, 3), (5, 5)])
def test_seeds_count_every_kind_each_input_set_differs(asked: int, expected: int) -> None:
    """`--seeds 3` is 3 seeds in all, each of another kind: random, another scale, edge/interior mix."""
    from aka_graph.tools.evaluator.harness.session import Session, Settings

    seeds = Session(Settings(op_dir=RMSNORM, seeds=asked, device="cpu")).seeds
    assert len(seeds) == expected
    assert [s[1] for s in seeds].count(2.0) == 1  # one at another scale
    mixes = [s for s in seeds if s[2] is not None]
    assert len(mixes) == 1 and mixes[0][0] == seeds[0][0] and mixes[0][2] != seeds[0][0]
    assert len({s[0] for s in seeds if s[2] is None}) == expected - 1  # fresh seeds otherwise


def test_native_operators_get_three_seeds_without_mixing() -> None:
    from aka_graph.tools.evaluator.harness.session import Session, Settings

    seeds = Session(Settings(op_dir=REPO_ROOT / "benchmarks/operators/native_rms_norm", device="cpu")).seeds
    assert len(seeds) == 3 and len({s[0] for s in seeds}) == 3 and all(s[2] is None for s in seeds)
