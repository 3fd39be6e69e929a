"""Spawning and talking to the untrusted worker from the trusted parent (watchdog included).

Standard library only at import time: the command line spawns the workers before the parent imports
torch, so the workers' start-up (interpreter, torch, CUDA) overlaps the parent's."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = __package__ or "harness"


class WorkerDied(RuntimeError):
    """The worker exited or was killed (crash, os._exit, watchdog)."""


def _package_root() -> Path:
    here = Path(__file__).resolve().parent
    return here.parents[PACKAGE.count(".")]


def worker_env(device: str, build_dir: Path) -> dict[str, str]:
    """The worker's environment: fresh build/cache dirs (set on this subprocess only)."""
    env = dict(os.environ)
    root = str(_package_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for var, sub in (
        ("TRITON_CACHE_DIR", "triton"),
        ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
        ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
        ("CUDA_CACHE_PATH", "cuda_cache"),
    ):
        path = build_dir / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("CUDA_MODULE_LOADING", "LAZY")
    return env


class WorkerProcess:
    def __init__(self, op_dir: Path, kernel_dir: Path, device: str) -> None:
        """`device`: cuda, cpu, or auto (the worker resolves it as the parent does; `wait_ready`
        returns what it chose). The channel is attached once the parent knows its device."""
        self.build_dir = Path(tempfile.mkdtemp(prefix="aka_build_"))
        self.log_path = self.build_dir / "worker.log"
        p2w_r, p2w_w = os.pipe()
        w2p_r, w2p_w = os.pipe()
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - lives as long as the worker
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                PACKAGE,
                "worker",
                "--op-dir",
                str(op_dir),
                "--kernel-dir",
                str(kernel_dir),
                "--device",
                device,
                "--rfd",
                str(p2w_r),
                "--wfd",
                str(w2p_w),
            ],
            pass_fds=(p2w_r, w2p_w),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            env=worker_env(device, self.build_dir),
            start_new_session=True,
        )
        os.close(p2w_r)
        os.close(w2p_w)
        self.chan: Any = None
        self.fds = (w2p_r, p2w_w)
        self.ready = False
        self.closed = False

    def attach(self, map_location: str) -> None:
        from .protocol import Channel

        self.chan = Channel(self.fds[0], self.fds[1], map_location=map_location)

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        reply = self.request(None, timeout_s)
        if "error" in reply:
            raise WorkerDied(reply["error"]["message"])
        self.ready = True
        return reply

    def request(self, msg: dict[str, Any] | None, timeout_s: float) -> dict[str, Any]:
        from .protocol import ChannelClosed, ChannelTimeout

        try:
            if msg is not None:
                self.chan.send(msg)
            return self.chan.recv(timeout_s)
        except ChannelTimeout:
            self.kill()
            raise
        except (ChannelClosed, BrokenPipeError) as exc:
            self.kill()
            raise WorkerDied(f"the worker died (exit {self.proc.poll()}): {self.log_tail()}") from exc

    def log_tail(self, n: int = 1500) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:].strip()
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        if self.closed:  # idempotent: the fds must never be closed twice (their numbers get reused)
            return
        self.closed = True
        self.kill()  # nothing of the worker's is needed any more; a graceful exit only costs time
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.log.close()
        import shutil

        shutil.rmtree(self.build_dir, ignore_errors=True)


def become_subreaper() -> bool:
    """PR_SET_CHILD_SUBREAPER: anything a worker double-forks is re-parented to us, not to init, so it
    can be found and killed before the verdict is written (and can never rewrite it afterwards)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _environ(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def kill_strays(known: set[int]) -> list[tuple[int, str]]:
    """Kill every child of this process that is not a known worker; (pid, its environment) of each."""
    strays = []
    for _ in range(20):  # a stray may fork again while we kill: repeat until none are left
        found = [pid for pid in _children(os.getpid()) if pid not in known]
        if not found:
            break
        for pid in found:
            strays.append((pid, _environ(pid)))
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return strays


def stop_workers(states: list[Any]) -> None:
    """Kill every worker, then every process a candidate left behind (re-parented to us as the
    subreaper): leaving one is a REWARD_HACK, attributed through the worker's private build dir."""
    workers = [ks.worker for ks in states if ks.worker is not None]
    for worker in workers:
        worker.kill()
    strays = kill_strays(known=set())
    for pid, environ in strays:
        owners = [ks for ks in states if ks.worker and str(ks.worker.build_dir) in environ] or states
        for ks in owners:  # dominates any earlier verdict: the process could have rewritten it
            ks.alive = False
            ks.error = (
                "REWARD_HACK",
                f"the kernel left a process running after its calls (pid {pid}); "
                "candidates must not fork or daemonise",
            )
    for worker in workers:
        worker.close()
