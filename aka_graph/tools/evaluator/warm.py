"""Coordinator side of the warm evaluator (issue 9, Speed): a campaign's candidates evaluated one after
another by one long-lived harness `serve` job (harness/serve.py) instead of a cold job each.

The service is started on the first evaluation of an operator with given settings, in a sandbox that can
leave a job running (`LocalSandbox.start`), and reused while those settings hold. Each request copies the
kernel into the job's spool, takes the GPU lock (when jobs on this GPU are exclusive) for the evaluation
only, and reads the result the service writes. Anything unexpected — the service failed to start, died,
timed out, wrote a malformed result, or reported its own harness failure — stops it and returns None: the
caller then evaluates cold (`evaluate_kernel`), so a warm path can cost speed but never a verdict. The
next evaluation starts a fresh service.

A service lives as long as this process (it dies with it: a campaign killed with -9 leaves no evaluator
behind) and ends by itself after `IDLE_TIMEOUT_S` without a request. What the service keeps warm and what
stays fresh per candidate is harness/serve.py's docstring.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aka_graph.tools.evaluator.evaluation_result import EvaluationResult
from aka_graph.tools.evaluator.reference_cache import JOB_FILE, carry_in, carry_out
from aka_graph.tools.evaluator.sandbox.gpu import GpuLock
from aka_graph.tools.evaluator.sandbox.job import LiveJob, SandboxJob

IDLE_TIMEOUT_S = 900.0
START_TIMEOUT_S = 300.0
POLL_S = 0.01
SPOOL = "spool"


@dataclass(frozen=True)
class ServiceKey:
    """What a service is fixed to: one sandbox, one operator, one set of evaluation settings."""

    sandbox: int
    op_dir: str
    seeds: int
    shape_ids: tuple[str, ...]
    device: str
    private_shapes: bool
    blob_root: str
    all_workloads: bool
    gpu_index: int | None
    exclusive_gpu: bool


class WarmEvaluator:
    def __init__(self, sandbox: Any, key: ServiceKey, job: SandboxJob, op_files: dict[str, Path]) -> None:
        self.sandbox, self.key, self.job, self.op_files = sandbox, key, job, op_files
        self.live: LiveJob | None = None
        self.failure = ""  # why the last warm attempt fell back to cold (reported, tested)
        self.refused = False  # the service said it cannot run here (failed.json): never tried again
        self.lock = threading.Lock()  # one request at a time: the service evaluates in order
        self.ids = itertools.count(1)

    @property
    def spool(self) -> Path:
        assert self.live is not None
        return self.live.work / SPOOL

    def _ensure_started(self) -> bool:
        if self.live is not None and self.live.alive():
            return True
        if self.refused:
            return False
        self.stop()
        self.live = self.sandbox.start(self.job)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if (self.spool / "ready.json").is_file():
                return True
            if (self.spool / "failed.json").is_file() or not self.live.alive():
                self.refused = (self.spool / "failed.json").is_file()  # this host, these settings
                self.failure = "the evaluator service did not start: " + self._why()
                self.stop()
                return False
            time.sleep(POLL_S * 5)
        self.failure = f"the evaluator service was not ready within {START_TIMEOUT_S:.0f} s"
        self.stop()
        return False

    def _why(self) -> str:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            return str(json.loads((self.spool / "failed.json").read_text()).get("message", ""))[:2000]
        return self.live.stderr_tail() if self.live is not None else ""

    def evaluate(self, kernel: Path, results_dir: Path, timeout_s: float) -> EvaluationResult | None:
        """The service's verdict for `kernel` (a directory or a kernel.py), or None: evaluate cold."""
        with self.lock:
            if not self._ensure_started():
                return None
            rid = f"{next(self.ids):06d}"
            dest = self.spool / "kernels" / rid
            if Path(kernel).is_file():
                dest.mkdir(parents=True)
                shutil.copy2(kernel, dest / "kernel.py")
            else:
                shutil.copytree(kernel, dest, ignore=shutil.ignore_patterns("__pycache__"))
            request = self.spool / "requests" / f"{rid}.json"
            (self.spool / "results" / f"{rid}.json").unlink(missing_ok=True)  # only the service's answer
            tmp = request.with_name(f".{rid}.tmp")
            tmp.write_text(json.dumps({"kernel": f"kernels/{rid}"}))
            try:
                with self._gpu_lock():
                    tmp.replace(request)
                    data = self._wait(self.spool / "results" / f"{rid}.json", timeout_s)
            finally:
                shutil.rmtree(dest, ignore_errors=True)
            if data is None:
                self.stop()
                return None
            results_dir.mkdir(parents=True, exist_ok=True)
            (results_dir / "result.json").write_text(json.dumps(data, indent=2) + "\n")
            if data.get("status") == "INFRA_ERROR":  # the service's own failure: the cold path decides
                self.failure = "the evaluator service failed: " + str(data.get("message"))[:2000]
                self.stop()
                return None
            try:
                return EvaluationResult.model_validate(data)
            except ValidationError as exc:
                self.failure = f"the evaluator service wrote a malformed result: {exc}"
                self.stop()
                return None

    def _gpu_lock(self) -> contextlib.AbstractContextManager[Any]:
        if not self.key.exclusive_gpu or self.live is None:
            return contextlib.nullcontext()
        return GpuLock(self.live.lock_key, self.sandbox.lock_dir, self.sandbox.gpu_lock_wait_s)

    def _wait(self, path: Path, timeout_s: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if path.is_file():
                try:
                    return json.loads(path.read_text())
                except (OSError, json.JSONDecodeError) as exc:
                    self.failure = f"unreadable result from the evaluator service: {exc}"
                    return None
            if self.live is None or not self.live.alive():
                self.failure = "the evaluator service died: " + self._why()
                return None
            time.sleep(POLL_S)
        self.failure = f"the evaluator service gave no result within {timeout_s:.0f} s"
        return None

    def stop(self) -> None:
        """End the service (asked first, then its tree killed); its reference timings are kept."""
        live, self.live = self.live, None
        if live is None:
            return
        with contextlib.suppress(OSError):
            (live.work / SPOOL / "stop").touch()
        end = time.monotonic() + 5
        while live.alive() and time.monotonic() < end:
            time.sleep(POLL_S * 5)
        carried = live.work / JOB_FILE
        if carried.is_file():
            carry_out(carried, self.op_files)
        live.stop()


_SERVICES: dict[ServiceKey, WarmEvaluator] = {}
_REGISTRY_LOCK = threading.Lock()


MAX_SERVICES = 4  # each holds torch and a spare worker in host memory: the least recently used one ends


def warm_evaluator(
    sandbox: Any, key: ServiceKey, argv: list[str], inputs: dict[str, Path], op_files: dict[str, Path]
) -> WarmEvaluator | None:
    """The service for `key` (made on first use), or None where the sandbox cannot leave a job running."""
    if not callable(getattr(sandbox, "start", None)):
        return None
    ended: list[WarmEvaluator] = []
    with _REGISTRY_LOCK:
        old = _SERVICES.pop(key, None)
        if old is not None and old.sandbox is not sandbox:  # another sandbox that got the same id()
            ended.append(old)
            old = None
        if old is not None:
            _SERVICES[key] = old  # most recently used last
        while len(_SERVICES) >= MAX_SERVICES and key not in _SERVICES:
            ended.append(_SERVICES.pop(next(iter(_SERVICES))))
        if key not in _SERVICES:
            carried, carry_env = carry_in(op_files)  # the reference's cached latencies, as a cold job
            job = SandboxJob(
                argv=[*argv, "--spool", SPOOL, "--idle-timeout", str(IDLE_TIMEOUT_S)],
                inputs={**inputs, **carried},
                sync_back=[],
                timeout_s=24 * 3600,
                env={"PYTHONPATH": ".", **carry_env},
                gpu_index=key.gpu_index,
                exclusive_gpu=False,  # the lock is taken per request (WarmEvaluator._gpu_lock)
                label="serve",
            )
            _SERVICES[key] = WarmEvaluator(sandbox, key, job, op_files)
        service = _SERVICES[key]
    for evicted in ended:
        with evicted.lock:  # never while it evaluates
            evicted.stop()
    return service


def stop_for(sandbox: Any) -> None:
    """End the services started in `sandbox` (a campaign's, when it ends: run_campaign)."""
    with _REGISTRY_LOCK:
        mine = [k for k, service in _SERVICES.items() if service.sandbox is sandbox]
        services = [_SERVICES.pop(k) for k in mine]
    for service in services:
        with service.lock, contextlib.suppress(Exception):
            service.stop()


@atexit.register
def stop_all() -> None:
    """Every service of this process ended (they would die with it anyway; this also keeps their
    reference timings)."""
    with _REGISTRY_LOCK:
        services = list(_SERVICES.values())
        _SERVICES.clear()
    for service in services:
        with contextlib.suppress(Exception):
            service.stop()
