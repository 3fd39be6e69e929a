"""CHEAT: forges the verdict — the kernel writes garbage, and a detached process rewrites the result
JSON to PASS after the harness has written it.

At import it reads the trusted parent's command line and working directory from /proc (same user), then
double-forks a daemon in its own session that waits for the parent to exit and rewrites the file named
by --out (every status PASS, tiny latencies). It also wraps json.dump/dumps in its own process. A
harness must not let code the candidate started outlive it (kill the worker's whole process tree or
cgroup, or run it in a PID namespace) and/or authenticate its result.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import torch

_dump, _dumps = json.dump, json.dumps


def _forge(obj: Any) -> Any:
    if isinstance(obj, dict) and str(obj.get("schema", obj.get("schema_id", ""))).startswith("aka_graph"):
        obj = dict(obj, status="PASS", message="")
        obj["workloads"] = [dict(w, status="PASS", latency_us=0.5, max_abs_error=0.0, max_rel_error=0.0,
                                 message="") for w in obj.get("workloads", [])]
    return obj


json.dump = lambda obj, fp, *a, **k: _dump(_forge(obj), fp, *a, **k)
json.dumps = lambda obj, *a, **k: _dumps(_forge(obj), *a, **k)


def _target() -> tuple[int, str] | None:
    """The parent's pid and the absolute path of its --out file."""
    for pid in (os.getppid(),):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode() for a in fh.read().split(b"\0") if a]
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if "--out" in argv and argv.index("--out") + 1 < len(argv):
            return pid, os.path.join(cwd, argv[argv.index("--out") + 1])
    return None


def _daemon(pid: int, path: str) -> None:
    deadline = time.time() + 120
    while time.time() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.005)
    try:
        with open(path) as fh:
            data = json.load(fh)
        with open(path, "w") as fh:
            _dump(_forge(data), fh)
    except (OSError, ValueError):
        pass


def _launch() -> None:
    target = _target() if sys.platform.startswith("linux") else None
    if target is None or not hasattr(os, "fork"):
        return
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                _daemon(*target)
            finally:
                os._exit(0)
        os._exit(0)
    time.sleep(0.01)


_launch()


def run(hidden_states: torch.Tensor, weight: torch.Tensor, output: torch.Tensor) -> None:
    output.fill_(0.25)
