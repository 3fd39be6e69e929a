"""The warm evaluator (`python -m harness serve`, serve.py): one trusted parent, many candidates.

What it may keep between candidates (the operator, the reference, the CUDA context) must never carry a
candidate's state or inputs into the next one's verdict: each candidate gets its own worker process (the
previous one is dead before the next verdict), its own seeds, and the cheats a cold evaluation catches are
caught after an honest candidate too. A bad request is answered and the service goes on; `stop`, idleness
and a broken operator end it with something the client can read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SOL_FIXTURES

HARNESS_PARENT = Path(__file__).resolve().parents[4] / "aka_graph" / "tools" / "evaluator"
CANDIDATES = Path(__file__).resolve().parent / "candidates"
BATCH1 = "864d596c-a930-4fc4-b241-02e6a06e92cb"  # rmsnorm's smallest workload


class Service:
    """A `serve` process on CPU over a spool in tmp_path, and the client side of its protocol."""

    def __init__(self, spool: Path, op_dir: Path, *extra: str) -> None:
        self.spool, self.n = spool, 0
        argv = [sys.executable, "-m", "harness", "serve", "--op-dir", str(op_dir), "--device", "cpu"]
        argv += ["--spool", str(spool), "--shape-id", BATCH1, "--seeds", "3", *extra]
        self.log = open(spool.parent / "serve.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, cwd=HARNESS_PARENT, stdout=self.log, stderr=self.log)

    def wait_for(self, name: str, timeout_s: float = 120) -> Path:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (self.spool / name).is_file():
                return self.spool / name
            assert self.proc.poll() is None or name == "failed.json", self.log_text()
            time.sleep(0.05)
        raise AssertionError(f"no {name} within {timeout_s} s: {self.log_text()}")

    def wait_until_prepared(self, timeout_s: float = 120) -> None:
        """Until the idle service says the next evaluation's references are ready."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                state = json.loads((self.spool / "state.json").read_text())
            except (OSError, ValueError):
                state = {}
            if state.get("state") == "idle" and state.get("references_prepared"):
                return
            time.sleep(0.05)
        raise AssertionError(f"no references prepared within {timeout_s} s: {self.log_text()}")

    def log_text(self) -> str:
        return (self.spool.parent / "serve.log").read_text(errors="replace")[-3000:]

    def evaluate(self, kernel: Path | str) -> dict:
        self.n += 1
        rid = f"{self.n:06d}"
        if isinstance(kernel, Path):
            shutil.copytree(kernel, self.spool / "kernels" / rid)
            kernel = f"kernels/{rid}"
        tmp = self.spool / "requests" / f".{rid}"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps({"kernel": kernel}))
        tmp.replace(self.spool / "requests" / f"{rid}.json")
        return json.loads(self.wait_for(f"results/{rid}.json", 300).read_text())

    def stop(self) -> int:
        (self.spool / "stop").touch()
        try:
            return self.proc.wait(timeout=30)
        finally:
            self.log.close()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    svc = Service(tmp_path / "spool", SOL_FIXTURES / "rmsnorm")
    svc.wait_for("ready.json")
    yield svc
    if svc.proc.poll() is None:
        svc.proc.kill()
        svc.proc.wait()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_each_candidate_gets_its_own_worker_and_seeds_and_the_previous_worker_is_gone(
    service: Service,
) -> None:
    first = service.evaluate(CANDIDATES / "rmsnorm_torch")
    service.wait_until_prepared()  # the next seeds' reference outputs, computed while idle
    second = service.evaluate(CANDIDATES / "rmsnorm_torch_returning")
    assert (first["status"], second["status"]) == ("PASS", "PASS"), (first["message"], second["message"])
    assert second["service"]["references_prepared"] == 1  # ... and used: they matched the seeds it drew
    assert [first["service"]["evaluation"], second["service"]["evaluation"]] == [1, 2]
    assert first["service"]["worker_pid"] != second["service"]["worker_pid"]
    assert not alive(first["service"]["worker_pid"]) and not alive(second["service"]["worker_pid"])
    assert not set(first["seeds"]) & set(second["seeds"])  # fresh seeds: no candidate meets another's inputs
    assert first["kernel_sha256"] != second["kernel_sha256"]
    assert "spans_s" in second and "correctness" in second["phases_s"]
    assert service.stop() == 0
    assert json.loads((service.spool / "state.json").read_text())["state"] == "stopped"


@pytest.mark.slow
def test_cheats_after_an_honest_candidate_are_still_caught(service: Service) -> None:
    assert service.evaluate(CANDIDATES / "rmsnorm_torch")["status"] == "PASS"
    assert service.evaluate(CANDIDATES / "adv_noop")["status"] == "INCORRECT"
    assert service.evaluate(CANDIDATES / "adv_inplace_input")["status"] == "REWARD_HACK"
    assert service.evaluate(CANDIDATES / "adv_background_thread")["status"] == "REWARD_HACK"
    # and an honest one after the cheats passes: nothing of theirs is left in the parent
    assert service.evaluate(CANDIDATES / "rmsnorm_torch_returning")["status"] == "PASS"


@pytest.mark.slow
def test_a_bad_request_is_answered_and_the_service_goes_on(service: Service, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    shutil.copytree(CANDIDATES / "rmsnorm_torch", outside)
    bad = service.evaluate("../elsewhere")  # a kernel outside the spool is never loaded
    assert bad["status"] == "INFRA_ERROR" and "inside the spool" in bad["message"]
    assert service.evaluate("kernels/missing")["status"] == "INFRA_ERROR"
    assert service.evaluate(CANDIDATES / "rmsnorm_torch")["status"] == "PASS"


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


@pytest.mark.slow
def test_a_spare_worker_that_died_while_idle_is_replaced(service: Service) -> None:
    deadline = time.monotonic() + 60
    while not json.loads((service.spool / "state.json").read_text()).get("spare_ready"):
        assert time.monotonic() < deadline, "the spare never became ready"
        time.sleep(0.05)
    spares = _children(service.proc.pid)
    assert spares, "no spare worker below the service"
    for pid in spares:
        os.kill(pid, 9)
    result = service.evaluate(CANDIDATES / "rmsnorm_torch")
    assert result["status"] == "PASS", result["message"]
    assert result["service"]["worker_pid"] not in spares


@pytest.mark.slow
def test_an_idle_service_ends_by_itself(tmp_path: Path) -> None:
    svc = Service(tmp_path / "spool", SOL_FIXTURES / "rmsnorm", "--idle-timeout", "1")
    svc.wait_for("ready.json")
    assert svc.proc.wait(timeout=60) == 0
    svc.log.close()
    assert json.loads((svc.spool / "state.json").read_text())["state"] == "stopped"


def test_a_broken_operator_is_reported_in_failed_json(tmp_path: Path) -> None:
    op = tmp_path / "op"
    shutil.copytree(SOL_FIXTURES / "rmsnorm", op)
    (op / "definition.json").write_text("{ not json")
    svc = Service(tmp_path / "spool", op)
    failed = json.loads(svc.wait_for("failed.json").read_text())
    assert svc.proc.wait(timeout=60) == 2
    svc.log.close()
    assert failed["status"] == "INFRA_ERROR" and "definition.json" in failed["message"]
