"""The warm evaluator: one trusted parent that evaluates a campaign's candidates one after another
(issue 9, Speed: "keep what may be kept warm warm").

A cold `evaluate` pays, for every candidate, the interpreter and torch in two processes, the parent's CUDA
context, the operator and its reference, the contract probe and the flop counter's first trace: about
2.5 s on the H200 before the first workload runs. None of that depends on the candidate. `serve` pays it
once and keeps it: the operator, the reference module (and a native operator's weights), the contract,
the speed-of-light table, the reference latencies, the CUDA context. What must stay fresh per candidate
stays fresh:
- every candidate gets its own jailed worker process (isolate.py: the spool, this job's files and /dev
  read-only to it, a private /dev/shm; the service does not start where workers cannot be jailed),
  spawned before its candidate exists (a *spare*: torch, CUDA and Triton imported while the agent is
  still writing the kernel) and killed after its verdict, with fresh build, Triton and inductor caches
  in its own scratch directory (worker_proc.py);
- every evaluation draws its own correctness, timing and re-validation seeds (Session.draw_seeds): no
  candidate meets inputs an earlier one saw;
- nothing a candidate produced is kept: the parent holds only what it computed itself.

The spool directory is the protocol, so that it works through any sandbox that shares a directory with
the client (a local job directory, an SSH host's job directory):

    ready.json            written once the service is warm: pid, device, operator
    state.json            "idle" or "busy", and whether the spare worker is ready (benchmarks wait on it)
    requests/ID.json      {"kernel": "DIR"}, DIR relative to the spool; written atomically by the client
    results/ID.json       the evaluation's result (the `evaluate` schema, plus "service"); atomic
    failed.json           the service could not start (the operator, the device): the cold path then
                          gives the user the full error
    stop                  the client asks the service to end

The service ends on `stop`, after `--idle-timeout` seconds without a request, or after a failure of the
harness itself (a CUDA error can poison the parent's context: the client starts a fresh one).

Standard library at import time but for the modules `run` needs (the command line imports this lazily).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import report
from .refcache import preload
from .worker_proc import WorkerProcess, become_subreaper

POLL_S = 0.005
SPARE_READY_TIMEOUT_S = 180.0
SCHEMA = "aka_graph.evaluator_service.v1"


def write_json(path: Path, obj: dict[str, Any]) -> None:
    """Atomically (rename): the reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, allow_nan=False, default=str) + "\n")
    os.replace(tmp, path)


def next_request(
    spool: Path, idle_timeout_s: float, on_idle: Callable[[], None] = lambda: None
) -> Path | None:
    """The oldest request (by name: the client numbers them), or None on `stop` or when idle too long.
    `on_idle` runs between polls (the spare's readiness is noted then)."""
    requests = spool / "requests"
    idle_since = time.monotonic()
    while not (spool / "stop").exists():
        names = _request_names(spool)
        if names:
            return requests / names[0]
        if time.monotonic() - idle_since > idle_timeout_s:
            return None
        on_idle()
        time.sleep(POLL_S)
    return None


def kernel_of(spool: Path, request: dict[str, Any]) -> Path:
    """The request's kernel directory, which must lie inside the spool (the client copies it there)."""
    raw = request.get("kernel")
    if not isinstance(raw, str) or not raw:
        raise ValueError("the request names no kernel directory")
    path = (spool / raw).resolve()
    if spool.resolve() not in path.parents or not path.is_dir():
        raise ValueError(f"kernel directory {raw!r} is not a directory inside the spool")
    return path


class Service:
    def __init__(self, settings: Any, spool: Path) -> None:
        self.settings, self.spool = settings, spool
        self.session: Any = None
        self.spare: WorkerProcess | None = None
        self.evaluated = 0

    def spawn_spare(self) -> None:
        """The next candidate's worker, started now so its start-up is off the next evaluation's path
        (none when the spare is still unused: a bad request does not consume it)."""
        if self.spare is not None:
            return
        self.spare = self.new_worker()
        self.write_state("idle")

    def new_worker(self) -> WorkerProcess:
        """A worker with no candidate yet (`adopt` gives it one), jailed as a cold evaluation's."""
        device = self.session.device.type if self.session is not None else self.settings.device
        return WorkerProcess(Path(self.settings.op_dir), None, device, self.settings.blob_root)

    def spare_ready(self) -> bool:
        """Whether the spare has said it is ready (read without waiting once its message is there)."""
        spare = self.spare
        if spare is None or spare.proc.poll() is not None:
            return False
        if not spare.ready and self.session is not None and _readable(spare.fds[0]):
            spare.attach(str(self.session.device))
            with contextlib.suppress(Exception):  # a spare that failed to start is replaced when used
                spare.wait_ready(SPARE_READY_TIMEOUT_S)
        return spare.ready

    def note_spare(self) -> None:
        """state.json updated once the spare has become ready (while idle)."""
        if self.spare is not None and not self.spare.ready and self.spare_ready():
            self.write_state("idle")

    def write_state(self, state: str) -> None:
        write_json(
            self.spool / "state.json",
            {
                "state": state,
                "evaluated": self.evaluated,
                "spare_ready": self.spare_ready(),
                "references_prepared": len(self.session.prepared) if self.session is not None else 0,
            },
        )

    def start(self) -> None:
        from .isolate import dev_sealed, unavailable
        from .session import Session

        why = unavailable() or (None if dev_sealed() else "the jail cannot seal /dev here")
        if why is not None:  # unjailed workers could write the spool, or leave files for the next one
            raise RuntimeError(
                f"the warm evaluator needs each worker jailed ({why}); candidates are evaluated cold"
            )

        preload()  # the carried reference-timing entries, read before any worker exists
        become_subreaper()
        self.spawn_spare()  # its start-up overlaps the session's
        self.session = Session(self.settings)
        from .speed_of_light import warm_up

        if self.session.spec is not None:
            warm_up()
        write_json(
            self.spool / "ready.json",
            {
                "schema": SCHEMA,
                "pid": os.getpid(),
                "device": self.session.device_info,
                "operator": self.session.op.name,
                "workloads": len(self.session.indices),
            },
        )
        self.write_state("idle")

    def evaluate(self, request_path: Path) -> tuple[dict[str, Any], bool]:
        """(result, whether the service may go on)."""
        from .modes import run
        from .trusted import ReferenceFailed

        received = time.perf_counter()
        try:
            request = json.loads(request_path.read_text())
            kernel = kernel_of(self.spool, request if isinstance(request, dict) else {})
        except (OSError, ValueError) as exc:
            return _failure("INFRA_ERROR", f"bad request {request_path.name}: {exc}"), True
        spare_was_ready = self.spare_ready()
        worker = self.spare
        self.spare = None
        if worker is None or worker.proc.poll() is not None:  # it died idle: a fresh one, cold
            if worker is not None:
                worker.close()
            worker = self.new_worker()
        self.write_state("busy")
        try:
            worker.adopt(kernel)
            results, _ = run(
                self.settings, {"A": kernel}, "A", 1, workers={"A": worker}, session=self.session
            )
        except ReferenceFailed as exc:  # the operator's own reference: the service itself is sound
            return _failure("INFRA_ERROR", str(exc)), True
        except ValueError as exc:  # a setting the service cannot honour (production without a jail)
            return _failure("INFRA_ERROR", str(exc)), True
        except Exception as exc:  # the harness's own failure: never a score, and a fresh service next
            tb = traceback.format_exc()[-2000:]
            return _failure("INFRA_ERROR", f"harness failure: {type(exc).__name__}: {exc}\n{tb}"), False
        finally:
            worker.close()
            self.session.reference.release_benches()  # the next worker gets the memory back
        res = results["A"]
        res.pop("label", None)
        self.evaluated += 1
        res["service"] = {
            "schema": SCHEMA,
            "evaluation": self.evaluated,
            "spare_ready": spare_was_ready,
            "references_prepared": self.session.prepared_used,
            "worker_pid": worker.pid,
            "wall_s": round(time.perf_counter() - received, 3),
        }
        return res, True

    def prepare_next(self) -> None:
        """The next evaluation's seeds and reference outputs, while no request waits (a request that
        comes meanwhile ends the preparation; the rest is computed when judged)."""
        if self.session.seeds_used:
            self.session.draw_seeds()
        try:
            self.session.prepare_references(lambda: bool(_request_names(self.spool)))
        except Exception:  # the evaluation computes them itself, and reports what fails there
            self.session.prepared.clear()
        self.write_state("idle")

    def close(self) -> None:
        if self.spare is not None:
            self.spare.close()
            self.spare = None


def serve(settings: Any, spool: Path, idle_timeout_s: float) -> int:
    """Evaluate the spool's requests until told to stop; 0 on a clean end, 1 after a harness failure."""
    spool = spool.resolve()
    (spool / "requests").mkdir(parents=True, exist_ok=True)
    (spool / "results").mkdir(parents=True, exist_ok=True)
    service = Service(settings, spool)
    try:
        try:
            service.start()
        except Exception as exc:
            write_json(spool / "failed.json", _failure("INFRA_ERROR", f"{type(exc).__name__}: {exc}"))
            return 2
        service.prepare_next()
        while True:
            path = next_request(spool, idle_timeout_s, service.note_spare)
            if path is None:
                return 0
            result, go_on = service.evaluate(path)
            write_json(spool / "results" / path.name, result)
            with contextlib.suppress(OSError):
                path.unlink()
            if not go_on:
                return 1
            service.spawn_spare()
            service.prepare_next()
    finally:
        service.close()
        with contextlib.suppress(OSError):
            write_json(spool / "state.json", {"state": "stopped", "evaluated": service.evaluated})


def _request_names(spool: Path) -> list[str]:
    """The waiting requests' file names, oldest first (the client numbers them)."""
    with contextlib.suppress(OSError):
        return sorted(e.name for e in os.scandir(spool / "requests") if e.name.endswith(".json"))
    return []


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])


def _failure(status: str, message: str) -> dict[str, Any]:
    return report.result(status, "", {"name": "unknown", "arch": "unknown"}, "none", False, [], [], message)
