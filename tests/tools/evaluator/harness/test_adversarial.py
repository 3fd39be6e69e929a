"""Red team: every cheating candidate in `candidates/adv_*` must come out REWARD_HACK or INCORRECT, never
PASS; every honest candidate must PASS (so the harness is not simply rejecting everything).

Each candidate runs through the real harness the way a sandbox job runs it: the harness directory copied
into a fresh job directory as the top-level package `harness`, the operator and kernel copied beside it,
`python -m harness evaluate ... --device cpu` under the Triton interpreter, `result.json` read back.
CUDA-only cheats (side streams, graph capture tricks) are honest on CPU and run in the GPU benchmark
(benchmarks/bench_evaluator_gpu.py) instead.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from tests.conftest import REPO_ROOT, SOL_FIXTURES

HARNESS_DIR = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
CANDIDATES = Path(__file__).resolve().parent / "candidates"
NATIVE_OP = REPO_ROOT / "benchmarks" / "operators" / "native_rms_norm"
NATIVE_CANDIDATE = REPO_ROOT / "benchmarks" / "candidates" / "native_rms_norm_triton"

# rmsnorm workloads small enough for the interpreter: batch 7 (not a multiple of 8) and batch 16.
RMSNORM_SHAPES = ["33bf737d-3b37-4e38-be80-ea39b4b46ae6", "a497c980-9e07-44cc-80c6-fc647ab29e84"]
CHEAT_SHAPES = RMSNORM_SHAPES[:1]
REJECTED = {"REWARD_HACK", "INCORRECT"}

# Cheats whose trick exists only on a CUDA device; on CPU they compute honestly.
GPU_ONLY = {"adv_side_stream", "adv_skip_during_capture", "adv_capture_trivial_kernel"}
# Leaves no result at all (it kills the harness): tested on its own below.
NO_RESULT = {"adv_kill_harness"}
# Attacks on the machine rather than the verdict (issue 13, class 7/8): each has a test of its own below.
RESOURCE = {"adv_host_memory_hog", "adv_hang_forever", "adv_write_harness_source"}

CPU_CHEATS = sorted(
    p.name for p in CANDIDATES.glob("adv_*") if p.name not in GPU_ONLY | NO_RESULT | RESOURCE
)
NEMOTRON_SHAPES = ["06179a8b-b919-5fe7-bd31-97a42e4f2da2"]  # 1 x 131 x 8192
GEMMA_SHAPES = ["c8b68cb3-33f7-5136-aa70-2fbbcca2fbd5"]  # 1 x 128 (rejected before any call)
# The fixture each cheat is written for (default rmsnorm, batch 7).
CHEAT_FIXTURE = {
    "adv_memo_unseen_inputs": ("nemotron_rms_norm", NEMOTRON_SHAPES),
    "adv_skip_last_rows": ("nemotron_rms_norm", NEMOTRON_SHAPES),
    "adv_resolve_name_gc": ("nemotron_rms_norm", NEMOTRON_SHAPES),
    "adv_posix_spawn_helper": ("nemotron_rms_norm", NEMOTRON_SHAPES),
    "adv_probe_harness_files": ("nemotron_rms_norm", NEMOTRON_SHAPES),
    "adv_pickle_payload": ("gemma3_swiglu", GEMMA_SHAPES),
    "adv_inline_cpp_callback": ("gemma3_swiglu", GEMMA_SHAPES),
}

# Honest candidates: (candidate, fixture, shape ids or None for all workloads).
HONEST = [
    ("rmsnorm_triton", "rmsnorm", RMSNORM_SHAPES),
    ("rmsnorm_torch", "rmsnorm", RMSNORM_SHAPES),
    ("rmsnorm_torch_returning", "rmsnorm", RMSNORM_SHAPES),
    ("nemotron_rms_norm_torch", "nemotron_rms_norm", ["06179a8b-b919-5fe7-bd31-97a42e4f2da2"]),
    ("flux_rope_torch", "flux_rope", None),
    ("custom_inputs_matmul_torch", "custom_inputs_matmul", None),
]
# Honest but too slow for the CI budget on 2 cores (a 19 GFLOP matmul per call): evaluated by
# `benchmarks/bench_evaluator_gpu.py --sections f` on a GPU instead.
GPU_HONEST = {"gemma3_swiglu_torch"}


def survivors(job: Path) -> list[str]:
    """Live processes that belong to the job (their working directory or environment inside it): what
    the candidate started and left behind. Once the harness has exited, anything found has outlived the
    evaluation and could still rewrite its verdict."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
            env = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:  # gone, a zombie, or not ours
            continue
        if cwd.startswith(str(job)) or str(job).encode() in env:
            found.append(f"pid {entry.name} in {cwd}")
    return found


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `condition` until it holds or `timeout_s` passes; whether it held."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def run_harness(tmp_path: Path, op_dir: Path, kernel_dir: Path, shape_ids: list[str] | None,
                seeds: int = 3, timeout_s: float = 240, no_survivors: bool = False,
                extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
                data_limit: int | None = None) -> dict[str, Any]:
    """Evaluate one kernel in a fresh job directory; return the parsed, schema-checked result.json.

    With `no_survivors`, no process of the job may be left once the harness has exited (whatever the
    candidate started must not outlive the evaluation and rewrite its verdict), and the file must read
    the same afterwards. `data_limit`: a hard RLIMIT_DATA for the harness (the worker's limit stays under
    it: isolate.memory_limit_bytes), for a candidate that fills memory until its limit."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(op_dir, job / "op")
    shutil.copytree(kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    (job / "tmp").mkdir()
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel",
            "--out", "result.json", "--seeds", str(seeds), "--device", "cpu"]
    for sid in shape_ids or []:
        argv += ["--shape-id", sid]
    argv += list(extra_args)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(job), "TMPDIR": str(job / "tmp"),
           "PYTHONPATH": ".", "TRITON_INTERPRET": "1", **(env or {})}
    def limited() -> None:
        if data_limit is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (data_limit, data_limit))

    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=timeout_s,
                          preexec_fn=limited)
    out = job / "result.json"
    assert out.is_file(), (f"harness wrote no result.json (exit {proc.returncode})\n"
                           f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    written = out.read_text()
    if no_survivors:
        # a process killed in the harness's last moments may take a few ms to be gone from /proc
        assert wait_until(lambda: not survivors(job), 5), (
            f"processes the candidate started outlived the evaluation: {survivors(job)}")
        later = out.read_text()
        assert later == written, (f"result.json was rewritten after the harness exited (status "
                                  f"{json.loads(written)['status']} -> {json.loads(later)['status']})")
    data = json.loads(written)
    EvaluationResult.model_validate(data)
    data["_stderr"] = proc.stderr[-3000:]
    return data


def describe(result: dict[str, Any]) -> str:
    rows = [f"{w.get('id')}: {w.get('status')} {w.get('latency_us')} us {w.get('message', '')}"
            for w in result.get("workloads", [])]
    return f"status={result['status']} message={result.get('message', '')!r}\n" + "\n".join(rows)


@pytest.mark.slow
@pytest.mark.parametrize("candidate", CPU_CHEATS)
def test_cheating_candidate_is_rejected_never_passes(candidate: str, tmp_path: Path) -> None:
    fixture, shapes = CHEAT_FIXTURE.get(candidate, ("rmsnorm", CHEAT_SHAPES))
    result = run_harness(tmp_path, SOL_FIXTURES / fixture, CANDIDATES / candidate, shapes, no_survivors=True,
                         timeout_s=280)  # under pytest-timeout (300 s)
    assert result["status"] in REJECTED, f"{candidate} was not rejected:\n{describe(result)}"


@pytest.mark.slow
def test_candidate_that_kills_the_harness_never_gets_a_passing_verdict(tmp_path: Path) -> None:
    try:
        result = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "adv_kill_harness",
                             CHEAT_SHAPES, timeout_s=120, no_survivors=True)
    except AssertionError as exc:  # no result.json: the coordinator reports INFRA_ERROR, never a score
        assert "wrote no result.json" in str(exc)
        return
    assert result["status"] in REJECTED | {"RUNTIME_ERROR", "INFRA_ERROR"}, describe(result)


@pytest.mark.slow
@pytest.mark.parametrize(("candidate", "fixture", "shape_ids"), HONEST, ids=[h[0] for h in HONEST])
def test_honest_candidate_passes(candidate: str, fixture: str, shape_ids: list[str] | None,
                                 tmp_path: Path) -> None:
    result = run_harness(tmp_path, SOL_FIXTURES / fixture, CANDIDATES / candidate, shape_ids)
    assert result["status"] == "PASS", f"honest {candidate} on {fixture} failed:\n{describe(result)}"
    assert all(w["status"] == "PASS" and (w["latency_us"] or 0) > 0 for w in result["workloads"])


@pytest.mark.slow
def test_native_triton_model_passes_on_a_subset_of_its_shapes(tmp_path: Path) -> None:
    shapes = ["t5_h512_bf16", "t32_h5120_bf16", "t64_h4096_fp16"]
    result = run_harness(tmp_path, NATIVE_OP, NATIVE_CANDIDATE, shapes)
    assert result["status"] == "PASS", describe(result)
    assert sorted(w["id"] for w in result["workloads"]) == sorted(shapes)


@pytest.mark.slow
def test_native_candidate_cannot_exfiltrate_private_shapes_through_the_result(tmp_path: Path) -> None:
    """Production mode keeps exact shapes from the agent; the verdict must not carry them back."""
    shapes = ["t777_h3072_bf16"]
    result = run_harness(tmp_path, NATIVE_OP, REPO_ROOT / "benchmarks" / "candidates" /
                         "native_rms_norm_leak_shapes", shapes, extra_args=("--private-shapes",))
    assert result["status"] != "PASS"
    text = str({k: v for k, v in result.items() if k != "_stderr"})
    assert "num_tokens" not in text and "LEAK" not in text, (
        "private shapes.json content reached result.json: " + result.get("message", "")[:300])


def test_every_candidate_is_classified_and_value_returning_ones_declare_it() -> None:
    names = {p.name for p in CANDIDATES.iterdir() if (p / "kernel.py").is_file()}
    # classified in test_redteam.py, test_redteam_round4.py, test_redteam_warm.py, test_redteam_round7.py
    # test_redteam_round8.py, ..., test_redteam_round13.py, test_redteam_round13b.py,
    # test_native_builds.py, test_redteam_round15b.py, test_redteam_round23.py, test_redteam_round24.py,
    # test_layout_change.py, test_large_host_sets.py (redteam25_: round 25's red team, open ones in
    # BENCHMARKS.md), test_redteam_round27.py, test_redteam_round29.py and (honest ones)
    # test_false_alarms_round7.py
    elsewhere = (
        "redteam_", "redteam4_", "redteam5_", "redteam7_", "redteam8_", "redteam8b_", "redteam9_", "honest7_",
        "honest8_", "honest9_", "redteam9b_", "redteam10_", "honest10_", "redteam11_", "honest11_",
        "redteam11b_", "honest11b_", "honest11c_", "redteam11c_", "honest11d_", "redteam12_", "honest12r_",
        "honest12_", "honest13_", "redteam13_", "honest13r_", "redteam13b_", "honest13b_",
        "redteam14_", "honest14_", "redteam15_", "honest15_", "redteam15b_", "redteam23_", "redteam24_",
        "honest25_", "redteam25_", "redteam27_", "redteam29_",
    )
    names -= {n for n in names if n.startswith(elsewhere)}
    assert names == set(CPU_CHEATS) | GPU_ONLY | NO_RESULT | RESOURCE | GPU_HONEST | {h[0] for h in HONEST}
    for sol in CANDIDATES.glob("*/solution.json"):
        if sol.parent.name.startswith(elsewhere):
            continue
        spec = json.loads(sol.read_text())
        assert spec["spec"]["destination_passing_style"] is False
        assert spec["sources"][0]["content"] == (sol.parent / "kernel.py").read_text(), (
            f"{sol}: inlined source is stale; regenerate it from kernel.py")


def test_native_operator_has_at_least_fifty_shapes_each_with_both_kwarg_sets() -> None:
    shapes = json.loads((NATIVE_OP / "shapes.json").read_text())
    assert len(shapes) >= 50
    assert all(set(entry) == {"init_kwargs", "input_kwargs"} for entry in shapes.values())


# -- issue 13: the cheats' checks hold without the source policy (defence in depth) -------------------------

# Cheats the policy stops first; with it switched off, the check behind it must still reject them.
BEHIND_THE_POLICY = {
    "adv_posix_spawn_helper": ("nemotron_rms_norm", NEMOTRON_SHAPES, "started processes of its own"),
    # its update of the Sentinel's snapshot of watched names misses guards.Namespaces (round 11), which
    # names the patch before the parent's fingerprint of the inputs would
    "adv_alias_tensor_patch": ("rmsnorm", CHEAT_SHAPES, "torch.equal was added, replaced or removed"),
    "adv_resolve_name_gc": ("nemotron_rms_norm", NEMOTRON_SHAPES, "harness's own clock"),
    "adv_helper_module_at_import": ("rmsnorm", CHEAT_SHAPES, ""),
    "adv_probe_harness_files": ("nemotron_rms_norm", NEMOTRON_SHAPES, ""),
    # the worker's own input checks switched off: the parent's fingerprint of its own files (sharedinputs.py)
    "adv_tamper_fingerprints": ("rmsnorm", CHEAT_SHAPES, "the kernel modified input(s) [0]"),
}


@pytest.mark.slow
@pytest.mark.parametrize("candidate", sorted(BEHIND_THE_POLICY))
def test_cheats_are_rejected_by_the_checks_behind_the_policy(candidate: str, tmp_path: Path) -> None:
    fixture, shapes, words = BEHIND_THE_POLICY[candidate]
    result = run_harness(tmp_path, SOL_FIXTURES / fixture, CANDIDATES / candidate, shapes, no_survivors=True,
                         timeout_s=280, extra_args=("--no-source-policy",))
    assert result["status"] in REJECTED, f"{candidate} was not rejected:\n{describe(result)}"
    assert words in result["message"] + str(result["workloads"]), describe(result)


@pytest.mark.slow
def test_a_kernel_that_kills_its_parent_is_blamed_never_the_environment(tmp_path: Path) -> None:
    result = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "adv_kill_parent_computed",
                         CHEAT_SHAPES, timeout_s=120, extra_args=("--no-source-policy",))
    assert result["status"] in REJECTED | {"RUNTIME_ERROR"}, describe(result)


@pytest.mark.slow
def test_the_worker_cannot_write_the_harness_source(tmp_path: Path) -> None:
    result = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "adv_write_harness_source",
                         CHEAT_SHAPES, extra_args=("--no-source-policy",))
    assert "rewritten by the candidate" not in (tmp_path / "job" / "harness" / "report.py").read_text()
    assert result["status"] == "PASS", describe(result)  # honest once the write is refused
    assert result.get("isolation", {}).get("worker") == "namespace", result.get("isolation")


@pytest.mark.slow
def test_a_host_memory_hog_hits_the_workers_limit_and_the_verdict_says_so(tmp_path: Path) -> None:
    result = run_harness(tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "adv_host_memory_hog",
                         CHEAT_SHAPES, timeout_s=120)
    assert result["status"] == "RUNTIME_ERROR", describe(result)
    assert "memory limit" in result["message"], describe(result)


@pytest.mark.slow
def test_a_hung_kernel_leaves_no_process_when_the_evaluator_is_killed(tmp_path: Path) -> None:
    """The evaluator killed from outside (an outer `timeout`) mid-call: nothing of the kernel survives."""
    from aka_graph.tools.evaluator.harness.proctree import descendants, read_proc

    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOL_FIXTURES / "rmsnorm", job / "op")
    shutil.copytree(CANDIDATES / "adv_hang_forever", job / "kernel")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(job), "PYTHONPATH": "."}
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", "op", "--kernel-dir", "kernel",
            "--out", "result.json", "--device", "cpu", "--shape-id", CHEAT_SHAPES[0]]
    proc = subprocess.Popen(argv, cwd=job, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def spinning() -> bool:  # the kernel's call has started spinning
            return any(p.state == "R" and p.name.startswith("py") for p in descendants(proc.pid))

        assert wait_until(spinning, 120), "the hanging kernel never started"
        tree = [p.pid for p in descendants(proc.pid)]
        proc.kill()
        proc.wait()
        wait_until(lambda: not any(read_proc(pid) for pid in tree), 10)
        left = [p for p in (read_proc(pid) for pid in tree) if p is not None and p.state != "Z"]
        assert not left, f"processes of the kernel outlived the evaluator: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
