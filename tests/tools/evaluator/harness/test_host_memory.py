"""A CPU evaluation of a workload the host cannot hold (issue 9: the owner re-runs the real problems on a
CPU too): the public benchmark's MoE expert problems carry a 22.5 GB expert bank in every call. On a CPU
both processes hold it, and the worker may use half the machine, so on a small host the worker's input
draw ran past its memory limit, and the honest reference came back as a kernel error (RUNTIME_ERROR).
The harness now says, before drawing anything, that the host is too small: INFRA_ERROR, exit 1, with the
workload, the sizes and where the problem can run."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.memory import GIB, host_shortfall
from tests.conftest import REPO_ROOT

BANK = REPO_ROOT / "tests" / "fixtures" / "sol" / "host_exceeding_expert_bank"


@pytest.mark.parametrize(
    ("set_gib", "available_gib", "worker_gib", "fits"),
    [
        (1, 20, 12, True),  # a gigabyte call on a 24 GB host
        (6, 12, 12, True),  # exactly twice the set available, and the worker may hold one
        (6, 11.9, 12, False),  # the two processes together do not fit
        (13, 100, 12, False),  # plenty free, but the worker may not hold one call
        (22.5, 20, 12, False),  # the public MoE expert bank on a 24 GB host
        (22.5, 120, 64, True),  # ... and on the H200's 128 GB host
    ],
)
def test_a_call_fits_when_the_worker_may_hold_it_and_the_host_holds_it_twice(
    set_gib: float, available_gib: float, worker_gib: float, fits: bool
) -> None:
    why = host_shortfall(int(set_gib * GIB), int(available_gib * GIB), int(worker_gib * GIB))
    assert (why is None) is fits
    if why:
        assert f"{set_gib:.1f} GiB" in why and f"{2 * set_gib:.1f} GiB in all" in why
        assert "--device cuda" in why and f"at least {int(2 * set_gib + 2 + 0.999)} GiB free" in why


def _limited(data_bytes: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (data_bytes, data_bytes))

    return apply


def test_the_workers_limit_stays_under_a_hard_limit_the_harness_was_started_with() -> None:
    code = (
        "from aka_graph.tools.evaluator.harness.isolate import memory_limit_bytes, host_memory_bytes;"
        "print(memory_limit_bytes(), host_memory_bytes())"
    )
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    limit, host = map(int, free.stdout.split())
    assert limit == max(4 * GIB, host // 2)
    capped = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, preexec_fn=_limited(3 * GIB)
    )
    assert int(capped.stdout.split()[0]) == 3 * GIB


@pytest.mark.slow
def test_a_host_too_small_for_the_expert_bank_is_the_environments_shortfall_said_before_any_draw(
    tmp_path: Path,
) -> None:
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    source = json.loads((BANK / "definition.json").read_text())["reference"]
    (kernel / "kernel.py").write_text(source + "\n\nDESTINATION_PASSING_STYLE = False\n")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "aka_graph", "evaluate", str(BANK), str(kernel), "--device", "cpu", "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        preexec_fn=_limited(8 * GIB),  # whatever the test host's size: the worker may use 8 GiB at most
    )
    took = time.monotonic() - start
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "INFRA_ERROR", result["message"][:2000]
    message = result["message"]
    assert "workload bank-16 cannot be evaluated on this host's CPU" in message  # the smallest, named
    assert "21.0 GiB" in message and "8.0 GiB" in message and "--device cuda" in message
    assert "RUNTIME_ERROR" not in proc.stderr and "Traceback" not in proc.stderr
    assert took < 120  # said before 21 GiB of experts were drawn in either process


def _child_memory_cgroup(name: str, limit: int) -> Path | None:
    """A new memory cgroup of `limit` bytes under this process's own (v1 or v2), or None where this host
    does not let the test make one (no write access, no memory controller there)."""
    root = Path("/sys/fs/cgroup")
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = [ln.split(":", 2)[2] for ln in lines if "memory" in ln.split(":", 2)[1].split(",")]
    v2 = [ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")]
    if v1 and (root / "memory").is_dir():
        mount, limit_file = root / "memory", "memory.limit_in_bytes"
        path = v1[0]
    elif v2 and (root / "cgroup.controllers").exists():
        mount, limit_file = root, "memory.max"
        path = v2[0]
    else:
        return None
    own = mount / path.lstrip("/")
    child = (own if own.is_dir() else mount) / name
    try:
        child.mkdir()
        (child / limit_file).write_text(str(limit))
    except OSError:
        with contextlib.suppress(OSError):
            child.rmdir()
        return None
    return child


@pytest.mark.slow
def test_a_container_smaller_than_the_host_is_what_the_check_measures(tmp_path: Path) -> None:
    """Inside a memory cgroup of 8 GiB (a container's `--memory 8g`) /proc/meminfo still shows the whole
    machine; the check reads the cgroup's limit (hostmem.py) and says so, instead of letting the cgroup's
    OOM killer end the draw as if the kernel or the operator had failed."""
    group = _child_memory_cgroup(f"aka_test_{os.getpid()}", 8 * GIB)
    if group is None:
        pytest.skip("this host does not let the test make a memory cgroup")
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    source = json.loads((BANK / "definition.json").read_text())["reference"]
    (kernel / "kernel.py").write_text(source + "\n\nDESTINATION_PASSING_STYLE = False\n")

    def join() -> None:
        (group / "cgroup.procs").write_text("0")

    argv = [sys.executable, "-m", "aka_graph", "evaluate", str(BANK), str(kernel), "--device", "cpu"]
    argv.append("--json")
    try:
        proc = subprocess.run(
            argv,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "TMPDIR": str(tmp_path)},
            preexec_fn=join,
        )
    finally:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "INFRA_ERROR", result["message"][:2000]
    assert "memory cgroup's limit of 8.0 GiB" in result["message"], result["message"]
    assert "workload bank-16 cannot be evaluated on this host's CPU" in result["message"]


def _raised(fn) -> BaseException:  # type: ignore[no-untyped-def]
    try:
        fn()
    except BaseException as exc:  # the exception itself is what is tested
        return exc
    raise AssertionError("nothing raised")


def test_the_cpu_allocators_runtime_error_is_running_out_of_memory_and_other_errors_are_not() -> None:
    import torch

    from aka_graph.tools.evaluator.harness.inputs import host_out_of_memory, out_of_memory

    huge = _raised(lambda: torch.empty(1 << 50, dtype=torch.uint8))  # torch's own, a plain RuntimeError
    assert type(huge) is RuntimeError and host_out_of_memory(huge) and out_of_memory(huge)
    assert host_out_of_memory(MemoryError())
    assert out_of_memory(torch.OutOfMemoryError("CUDA out of memory")) and not host_out_of_memory(
        torch.OutOfMemoryError("CUDA out of memory")
    )
    shape = _raised(lambda: torch.ones(2, 3) @ torch.ones(2, 3))
    assert not out_of_memory(shape) and not out_of_memory(ValueError("can't allocate memory"))


def test_a_worker_draw_out_of_host_memory_is_the_environments_and_a_kernels_is_its_own() -> None:
    from aka_graph.tools.evaluator.harness.worker import DrawOutOfMemory, _failure

    drawn = _failure(DrawOutOfMemory("the harness's input draw of workload w ran out of ..."))
    assert drawn["status"] == "INFRA_ERROR" and "input draw of workload w" in drawn["message"]
    kernel = _failure(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9"))
    assert (
        kernel["status"] == "RUNTIME_ERROR"
        and "the kernel exceeded the worker's memory limit" in kernel["message"]
    )


GREEDY_GENERATOR = """import torch

def get_inputs(axes, device):
    scratch = torch.empty(1 << 50, dtype=torch.uint8, device=device)  # a petabyte of scratch
    return {"x": torch.randn(axes["n"], device=device)}

def run(x):
    return x * 2
"""


@pytest.mark.slow
def test_a_generator_that_runs_the_host_out_of_memory_is_the_environments_not_the_operators(
    tmp_path: Path,
) -> None:
    op = tmp_path / "op"
    op.mkdir()
    (op / "definition.json").write_text(
        json.dumps(
            {
                "name": "greedy_generator",
                "custom_inputs_entrypoint": "get_inputs",
                "axes": {"n": {"type": "var"}},
                "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
                "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
                "reference": GREEDY_GENERATOR,
            }
        )
    )
    (op / "workload.jsonl").write_text(
        json.dumps({"uuid": "w", "axes": {"n": 8}, "inputs": {"x": {"type": "custom"}}})
    )
    (tmp_path / "kernel.py").write_text(GREEDY_GENERATOR + "\nDESTINATION_PASSING_STYLE = False\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "aka_graph",
            "evaluate",
            str(op),
            str(tmp_path / "kernel.py"),
            "--device",
            "cpu",
            "--json",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "INFRA_ERROR"
    assert (
        "ran out of the host's memory" in result["message"] and "can't allocate memory" in result["message"]
    )
    assert "fix its generator" not in result["message"] and "Traceback" not in result["message"]
