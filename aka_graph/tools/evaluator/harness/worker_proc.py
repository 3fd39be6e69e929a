"""Spawning and talking to the untrusted worker from the trusted parent (watchdog included).

Standard library only at import time: the command line spawns the workers before the parent imports
torch, so the workers' start-up (interpreter, torch, CUDA) overlaps the parent's."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import shm
from .isolate import argv_prefix, die_with_parent, host_memory_bytes, unavailable
from .opview import hidden_paths, write_view
from .policy import compiled_module

PACKAGE = __package__ or "harness"


# Every process that is a worker itself (the spawned one, and in the jail the worker under `unshare`):
# never a stray, even when it dies re-parented to us (stop_workers).
OWN_PIDS: set[int] = set()


class WorkerDied(RuntimeError):
    """The worker exited or was killed (crash, os._exit, watchdog)."""


def _package_root() -> Path:
    here = Path(__file__).resolve().parent
    return here.parents[PACKAGE.count(".")]


# What the worker inherits from the parent's environment (issue 13, class 6): the runtime's own variables,
# never the caller's (a campaign's AKA_* settings, a virtualenv, an SSH agent, the shell's working
# directory): nothing there tells the candidate more than it needs to run.
INHERITED = (
    *("PATH", "LANG", "LC_", "LD_LIBRARY_PATH", "CUDA_", "NVIDIA_", "TRITON_", "TORCH", "PYTORCH_"),
    *("HIP_", "ROCM_", "HSA_", "NCCL_", "NVSHMEM_", "CPATH", "LIBRARY_PATH", "CC", "CXX", "OMP_", "MKL_"),
    *("CUTLASS_", "CUDNN_", "MAX_JOBS"),  # where C++ builds find CUTLASS / cuDNN (languages/toolchain.py)
)


def worker_env(device: str, build_dir: Path) -> dict[str, str]:
    """The worker's environment: the runtime's variables, fresh build/cache dirs, HOME and TMPDIR in
    `build_dir` (its scratch directory; set on this subprocess only)."""
    env = {k: v for k, v in os.environ.items() if k.startswith(INHERITED) and not k.startswith("AKA")}
    root = str(_package_root())
    env["PYTHONPATH"] = root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    for var, sub in (
        ("TRITON_CACHE_DIR", "triton"),
        ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
        ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
        ("CUDA_CACHE_PATH", "cuda_cache"),
        ("TMPDIR", "tmp"),
        ("HOME", "home"),
    ):
        path = build_dir / sub
        path.mkdir(parents=True, exist_ok=True)
        env[var] = str(path)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        # one thread everywhere (torch sets its own in the worker): BLAS threads that spin after a call
        # burn CPU time the parent's burst counts but no timed sample does (plausibility.py)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # torch.compile compiles in a pool of subprocesses by default: one thread keeps an honest kernel's
    # process tree a single process, so any other process is the candidate's own (proctree.py)
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    env.setdefault("CUDA_MODULE_LOADING", "LAZY")
    return env


def read_only_copy(kernel_dir: Path, dest: Path) -> Path:
    """The kernel directory as the worker sees it: a copy whose files and directories are read-only, so
    a candidate cannot add a module beside kernel.py at import time (or rewrite its own source) unless
    it changes permissions, which the source policy bans; the parent re-hashes it afterwards. Compiled
    modules (.pyc, .so, ...) are left out: only what the source policy read may run."""

    def ignored(_: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or compiled_module(n)]

    shutil.copytree(kernel_dir, dest, ignore=ignored, symlinks=False)
    for path in sorted(dest.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    dest.chmod(0o555)
    return dest


def remove_tree(path: Path) -> None:
    """rmtree that first gives back write permission (the read-only kernel copy)."""
    for sub in [path, *path.rglob("*")] if path.exists() else []:
        with contextlib.suppress(OSError):
            if sub.is_dir() and not sub.is_symlink():
                sub.chmod(0o755)
    shutil.rmtree(path, ignore_errors=True)


class WorkerProcess:
    def __init__(
        self, op_dir: Path, kernel_dir: Path | None, device: str, blob_root: Path | None = None
    ) -> None:
        """`device`: cuda, cpu, or auto (the worker resolves it as the parent does; `wait_ready`
        returns what it chose). The channel is attached once the parent knows its device.

        The worker is pointed at `op_view`, empty until the parent has chosen the job's workloads
        (`expose`); in the jail `op_dir` and `blob_root` themselves are covered (opview.py)."""
        self.build_dir = Path(tempfile.mkdtemp(prefix="aka_build_")).resolve()
        self.log_path = self.build_dir / "worker.log"
        self.scratch = self.build_dir / "scratch"  # the only place the jailed worker can write
        self.scratch.mkdir()
        self.op_view = self.build_dir / "op"
        self.op_view.mkdir()
        # a spare (serve.py) is spawned before its candidate exists: `adopt` copies it in later, where
        # the worker already looks (its private build dir, visible in the jail as it was at spawn)
        self.source_dir = Path(kernel_dir) if kernel_dir is not None else None
        self.kernel_dir = self.build_dir / "kernel"
        if self.source_dir is not None:
            self.kernel_dir = self.source_dir
            if self.source_dir.is_dir():
                self.kernel_dir = read_only_copy(self.source_dir, self.build_dir / "kernel")
        keep = [_package_root() / PACKAGE.replace(".", "/"), self.build_dir]
        keep += [self.source_dir] if self.source_dir is not None else []
        jail = argv_prefix(self.scratch, hidden_paths(Path(op_dir), blob_root, keep))
        self.isolation = "namespace" if jail is not None else f"none ({unavailable()})"
        p2w_r, p2w_w = os.pipe()
        w2p_r, w2p_w = os.pipe()
        # the worker's outputs come back through a sealed shared region where the kernel allows (shm.py)
        self.region_fd = shm.create(shm.capacity(host_memory_bytes()))
        bulk = ["--bulk-fd", str(self.region_fd)] if self.region_fd is not None else []
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - lives as long as the worker
        self.times: dict[str, float] = {"spawn": time.perf_counter()}  # start-up milestones (phases.py)
        self.proc = subprocess.Popen(
            [
                *(jail or []),
                sys.executable,
                "-m",
                PACKAGE,
                "worker",
                "--op-dir",
                str(self.op_view),
                "--kernel-dir",
                str(self.kernel_dir),
                "--device",
                device,
                "--rfd",
                str(p2w_r),
                "--wfd",
                str(w2p_w),
                *bulk,
            ],
            pass_fds=(p2w_r, w2p_w, *([self.region_fd] if self.region_fd is not None else [])),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            env=worker_env(device, self.scratch),
            cwd=self.scratch,
            start_new_session=True,
            preexec_fn=die_with_parent,  # before exec: the jail dies with the parent from the start
        )
        self.pid = self.proc.pid
        OWN_PIDS.add(self.pid)
        os.close(p2w_r)
        os.close(w2p_w)
        self.chan: Any = None
        self.worker_times: dict[str, float] = {}
        self.fds = (w2p_r, p2w_w)
        self.ready = False
        self.ready_reply: dict[str, Any] | None = None
        self.share_note = "not started"  # why large device outputs do not cross on the device ("": they do)
        self.closed = False

    def adopt(self, kernel_dir: Path) -> None:
        """A spare worker's candidate: copied (read-only) to where the worker will import it from. Only
        before the load command, once: a worker never holds two candidates."""
        if self.source_dir is not None:
            raise RuntimeError("this worker already has its candidate")
        self.source_dir = Path(kernel_dir)
        read_only_copy(self.source_dir, self.kernel_dir)

    def expose(self, op: Any, indices: list[int]) -> list[int]:
        """Write the job's view of the operator (only `indices`' workloads and their blobs) where the
        worker looks for it; the parent's indices in the worker's order (the load message carries them)."""
        return write_view(op, indices, self.op_view, link=self.isolation == "namespace")

    def attach(self, map_location: str) -> None:
        """The channel to the worker, once (a spare's may be attached while the parent waits for it)."""
        if self.chan is not None:
            return
        from .protocol import Channel

        region = shm.Region(self.region_fd) if self.region_fd is not None else None
        self.chan = Channel(self.fds[0], self.fds[1], map_location=map_location, region=region)

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        """The worker's ready message (kept: a spare's is read early, by serve.py, and again here)."""
        if self.ready_reply is not None:
            return self.ready_reply
        reply = self.request(None, timeout_s)
        self.times["ready_received"] = time.perf_counter()
        if "error" in reply:
            raise WorkerDied(reply["error"]["message"])
        self.ready, self.ready_reply = True, reply
        # large device outputs cross on the device from now on, where the worker's probe mapped
        self.share_note = self.chan.accept_probe(reply.get("share_probe"))
        # no candidate code has run yet: its processes now (in the jail, `unshare` and the worker under
        # it) are ours, and stay known if it dies before its candidate arrives (a spare killed while idle
        # leaves its jailed worker re-parented to us: never a stray of the next candidate's)
        OWN_PIDS.update(self.own_pids())
        timeline = reply.get("timeline")  # sent before the candidate was imported
        self.worker_times = dict(timeline) if isinstance(timeline, dict) else {}
        return reply

    def request(self, msg: dict[str, Any] | None, timeout_s: float) -> dict[str, Any]:
        from .protocol import ChannelClosed, ChannelTimeout

        try:
            if msg is not None:
                self.chan.send(msg)
            reply = self.chan.recv(timeout_s)
            if msg is not None and msg.get("cmd") == "load":
                self.times["candidate_loaded"] = time.perf_counter()
            return reply
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
            # the jailed worker is re-parented to us as it dies; before it was ready (no candidate
            # code yet) everything below it is the jail's own setup
            from .proctree import descendants

            before_ready = {p.pid for p in descendants(self.pid)} if not self.ready else set()
            OWN_PIDS.update(self.own_pids() | before_ready)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self) -> None:
        if self.closed:  # idempotent: the fds must never be closed twice (their numbers get reused)
            return
        self.closed = True
        self.kill()  # nothing of the worker's is needed any more; a graceful exit only costs time
        if self.chan is not None:  # our mapping's page-locked prefix (protocol.PinnedPrefix)
            self.chan.pinned.release()
        for fd in (*self.fds, *([self.region_fd] if self.region_fd is not None else [])):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.log.close()
        remove_tree(self.build_dir)

    def below(self) -> list[Any]:
        """Every process below the one spawned (the jail's worker among them), read from /proc once for
        `spawned` and `own_pids` after a reply."""
        from .proctree import descendants

        return [] if self.proc.poll() is not None else descendants(self.pid)

    def spawned(self, below: list[Any] | None = None) -> list[Any]:
        """Every process below the worker (zombies included), read from /proc: honest kernels start
        none that outlive a call. `below`: `self.below()`, when already read."""
        if self.proc.poll() is not None:
            return []
        below = self.below() if below is None else below
        if self.isolation == "namespace":  # the jail's `unshare` is the root; its one child is the worker
            below = [p for p in below if p.ppid != self.pid]
        return below

    def signal_handlers(self, own: set[int], before: set[tuple[int, int]]) -> list[str]:
        """What would run the kernel's code on a signal between the harness's steps, read from /proc by
        us: a handler for a timer signal (proctree.TIMER_SIGNALS), a POSIX timer the worker did not hold
        `before` (the kernel loaded; whatever signal it is aimed at: round 9's were SIGUSR2 and glibc's
        33), or a descriptor set to signal on I/O (O_ASYNC: the parent's next step would raise it).
        Handlers alone are no trigger: an honest Triton compile on a GPU makes LLVM catch SIGHUP, SIGUSR1,
        SIGUSR2, SIGTERM and more (seen on the H200), so a new handler by itself is not named."""
        from .proctree import TIMER_SIGNALS, async_fds, caught_signals

        if self.proc.poll() is not None:
            return []
        timers = {int(s): name for s, name in TIMER_SIGNALS.items()}
        found = sorted({timers[sig] for pid in own for sig in caught_signals(pid) if sig in timers})
        new = len(_posix_timers(own) - before)
        if new:
            found.append(f"the signal of {new} POSIX timer(s) of its own")
        fds = sorted(fd for pid in own for fd in async_fds(pid))
        if fds:
            found.append(f"the signals of descriptor(s) {fds} set to signal on I/O (O_ASYNC)")
        return found

    def timers(self, own: set[int]) -> set[tuple[int, int]]:
        """(pid, timer id) of every POSIX timer the worker's own processes hold now (the baseline that
        `signal_handlers` is given as `before`)."""
        if self.proc.poll() is not None:
            return set()
        return _posix_timers(own)

    def os_threads(self, own: set[int]) -> set[tuple[int, int]]:
        """(pid, tid) of every OS thread of the worker's own processes (`own_pids`), read from /proc."""
        from .proctree import thread_ids

        if self.proc.poll() is not None:
            return set()
        return {(pid, tid) for pid in own for tid in thread_ids(pid)}

    def own_pids(self, below: list[Any] | None = None) -> set[int]:
        """The worker's own processes: the one spawned, and in the jail the worker under `unshare`.
        `below`: `self.below()`, when already read."""
        below = self.below() if below is None else below
        return {self.pid} | {p.pid for p in below if p.ppid == self.pid}

    def helper_cpu_ns(self) -> int:
        """CPU time spent outside the worker's own process: live helpers below it, and every helper
        that it (or they) started and reaped (cutime + cstime, whole clock ticks)."""
        from .proctree import CLOCK_TICKS, descendants, read_proc, thread_cpu_ns

        own = self.own_pids()
        below = descendants(self.pid)
        members = [p for p in (read_proc(pid) for pid in own) if p is not None] + below
        reaped = sum(p.children_ticks for p in members) * (1_000_000_000 // CLOCK_TICKS)
        return reaped + sum(thread_cpu_ns(p.pid) for p in below if p.pid not in own)

    def cpu_ns(self) -> tuple[int, int] | None:
        """CPU time of the worker's whole tree, incl. helpers it started and reaped, and threads that
        exited: (precise, coarse) ns, see proctree.tree_cpu_pair."""
        from .proctree import tree_cpu_pair

        return tree_cpu_pair(self.pid)


def become_subreaper() -> bool:
    """PR_SET_CHILD_SUBREAPER: anything a worker double-forks is re-parented to us, not to init, so it
    can be found and killed before the verdict is written (and can never rewrite it afterwards)."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def stop_workers(states: list[Any]) -> None:
    """Find, then kill, every process a candidate started: first each worker's own descendants (zombies
    included), scanned *before* the worker is killed (a killed worker's children are re-parented and its
    group kill would hide them), then whatever was re-parented to us as the subreaper (double-forked),
    repeated until nothing is left. Any such process is a REWARD_HACK, attributed through the worker's
    tree or its private build dir; it dominates any earlier verdict (it could have rewritten it)."""
    from .proctree import describe, kill_all, reap, strays, table

    workers = [ks.worker for ks in states if ks.worker is not None]
    found: dict[int, list[Any]] = {id(ks): ks.worker.spawned() for ks in states if ks.worker is not None}
    OWN_PIDS.update(pid for w in workers for pid in w.own_pids())
    known = set(OWN_PIDS)  # workers re-parented to us as they die are not strays
    orphans = strays(known)
    for worker in workers:
        worker.kill()
    for _ in range(20):  # a stray may fork again while we kill: repeat until none are left
        for procs in found.values():
            kill_all(procs)
        kill_all(orphans)
        more = strays(known)
        reap([p for p in table().values() if p.pid in known])
        if not more:
            break
        orphans += [p for p in more if p not in orphans]
    seen = {p.pid for procs in found.values() for p in procs}
    for proc in orphans:
        if proc.pid in seen:  # a worker's child, re-parented to us when the worker died
            continue
        environ = _environ(proc.pid)
        owners = [ks for ks in states if ks.worker and str(ks.worker.build_dir) in environ] or states
        for ks in owners:
            found.setdefault(id(ks), []).append(proc)
    for ks in states:
        procs = found.get(id(ks)) or []
        if procs:
            ks.alive = False
            ks.error = (
                "REWARD_HACK",
                f"the kernel started processes of its own ({describe(procs)}); candidates must not fork, "
                "spawn or daemonise: work in another process is work nobody times",
            )
    for worker in workers:
        worker.close()


def _environ(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _posix_timers(own: set[int]) -> set[tuple[int, int]]:
    """(pid, timer id) of the POSIX timers processes `own` hold (proctree.posix_timers)."""
    from .proctree import posix_timers

    return {(pid, timer) for pid in own for timer in posix_timers(pid)}
