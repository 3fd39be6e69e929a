"""The coordinator's warm evaluator (warm.py): a campaign's evaluations through one long-lived `serve` job
in the real LocalSandbox (bubblewrap where it works), and the rule that a warm path may cost speed but
never a verdict: a service that died is replaced, one that cannot start falls back to the cold job, and
a service never outlives the process that started it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_graph.tools.evaluator import warm
from aka_graph.tools.evaluator.evaluation import evaluate_kernel
from aka_graph.tools.evaluator.sandbox.local import LocalSandbox
from tests.conftest import REPO_ROOT, SOL_FIXTURES

CANDIDATES = REPO_ROOT / "tests" / "tools" / "evaluator" / "harness" / "candidates"
BATCH1 = "864d596c-a930-4fc4-b241-02e6a06e92cb"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[LocalSandbox]:
    yield LocalSandbox(isolation="auto", base_dir=tmp_path, lock_dir=tmp_path)
    warm.stop_all()


def _evaluate(sandbox: LocalSandbox, kernel: Path, out: Path, op: Path = SOL_FIXTURES / "rmsnorm"):
    return evaluate_kernel(
        sandbox, op, kernel, out, device="cpu", shape_ids=[BATCH1], warm=True, timeout_s=300
    )


def _service() -> warm.WarmEvaluator:
    (service,) = warm._SERVICES.values()
    return service


@pytest.mark.slow
def test_successive_candidates_share_one_service_with_a_fresh_worker_each(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    first = _evaluate(sandbox, CANDIDATES / "rmsnorm_torch", tmp_path / "r1")
    job = _service().live
    second = _evaluate(sandbox, CANDIDATES / "adv_noop", tmp_path / "r2")
    third = _evaluate(sandbox, CANDIDATES / "rmsnorm_torch_returning", tmp_path / "r3")
    assert [first.status, second.status, third.status] == ["PASS", "INCORRECT", "PASS"]
    assert _service().live is job and job is not None and job.alive()  # one service for all three
    services = [json.loads((tmp_path / f"r{n}" / "result.json").read_text())["service"] for n in (1, 2, 3)]
    assert [s["evaluation"] for s in services] == [1, 2, 3]
    assert len({s["worker_pid"] for s in services}) == 3
    assert not list((job.work / "spool" / "kernels").iterdir())  # each request's kernel copy removed


@pytest.mark.slow
def test_a_service_that_died_is_replaced(sandbox: LocalSandbox, tmp_path: Path) -> None:
    assert _evaluate(sandbox, CANDIDATES / "rmsnorm_torch", tmp_path / "r1").status == "PASS"
    job = _service().live
    assert job is not None
    os.killpg(job.proc.pid, signal.SIGKILL)
    job.proc.wait()
    assert _evaluate(sandbox, CANDIDATES / "rmsnorm_torch", tmp_path / "r2").status == "PASS"
    assert _service().live is not job


def test_a_service_that_cannot_start_falls_back_to_the_cold_job(
    sandbox: LocalSandbox, tmp_path: Path
) -> None:
    op = tmp_path / "op"
    op.mkdir()
    (op / "definition.json").write_text((SOL_FIXTURES / "rmsnorm" / "definition.json").read_text())
    (op / "workload.jsonl").write_text('{"uuid": "w1", "axes": {"batch_size": 1}, "inputs": {}}\n{ broken\n')
    result = _evaluate(sandbox, CANDIDATES / "rmsnorm_torch", tmp_path / "r", op=op)
    # the cold job's verdict: the user's error named in full, as without a service
    assert result.status == "INFRA_ERROR" and "workload.jsonl" in result.message
    assert "did not start" in _service().failure and _service().live is None


@pytest.mark.slow
def test_the_service_dies_with_the_campaign_process(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from aka_graph.tools.evaluator.sandbox.local import LocalSandbox
        from aka_graph.tools.evaluator.evaluation import evaluate_kernel
        from aka_graph.tools.evaluator import warm
        tmp = Path({str(tmp_path)!r})
        sb = LocalSandbox(isolation="auto", base_dir=tmp, lock_dir=tmp)
        op, kernel = Path({str(SOL_FIXTURES / "rmsnorm")!r}), Path({str(CANDIDATES / "rmsnorm_torch")!r})
        r = evaluate_kernel(sb, op, kernel, tmp / "r", device="cpu", shape_ids=[{BATCH1!r}], warm=True)
        (service,) = warm._SERVICES.values()
        print(r.status, service.live.proc.pid, flush=True)
        time.sleep(600)
        """
    )
    campaign = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert campaign.stdout is not None
    status, pid = campaign.stdout.readline().split()
    assert status == "PASS"
    campaign.kill()  # kill -9: no atexit, no cleanup of its own
    campaign.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _exists(int(pid)):
        time.sleep(0.1)
    assert not _exists(int(pid)), "the evaluator service outlived the campaign"


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
