"""`LocalSandbox`: run a job on this machine in a fresh directory, isolated by bubblewrap when possible.

The coordinator's own checkout, keys and network stay out of reach of the candidate; the watchdog and
the process-session kill make sure a timed-out job leaves nothing running.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

import aka_graph.tools.evaluator.health as health_module
from aka_graph.tools.evaluator.harness.isolate import JAIL_EXIT, SANDBOX_ISOLATION_VAR
from aka_graph.tools.evaluator.sandbox.binds import RuntimeBind, check_runtime_bind, parse_runtime_bind
from aka_graph.tools.evaluator.sandbox.files import stage_inputs, sync_back
from aka_graph.tools.evaluator.sandbox.gpu import (
    NVIDIA_SMI_QUERY,
    GpuLock,
    device_minor_from_proc,
    gpu_device_nodes,
    select_gpu,
)
from aka_graph.tools.evaluator.sandbox.isolation import (
    DEFAULT_PATH,
    TOP_LEVEL_SYSTEM_DIRS,
    BwrapConfig,
    bwrap_argv,
    host_runtime_env,
    job_environment,
    unshare_argv,
)
from aka_graph.tools.evaluator.sandbox.job import HealthReport, LiveJob, SandboxJob, SandboxResult
from aka_graph.tools.evaluator.sandbox.outcome import (
    environment_failure,
    health_from_result,
    judge_command,
    read_output,
)
from aka_graph.tools.evaluator.sandbox.process import KILL_GRACE_S, run_tree

log = logging.getLogger(__name__)
Isolation = Literal["auto", "bwrap", "unshare", "none"]
HEALTH_SCRIPT = "aka_health.py"
_BWRAP_CHECKED: dict[tuple[str, int], str | None] = {}
_ISOLATION_WARNED: set[str] = set()
HOW_TO = (  # what the isolation warning tells the user to do
    "To isolate them: install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`) on a kernel that "
    "allows unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`; Ubuntu 24.04: "
    "`sysctl kernel.apparmor_restrict_unprivileged_userns=0`)."
)


class SandboxConfigError(ValueError):
    """The sandbox cannot be built as asked (names the option and the fix)."""


def interpreter_binds(python: str) -> list[RuntimeBind]:
    """Read-only binds that make `python` and its packages usable inside bubblewrap."""
    prefixes = {sys.prefix, sys.base_prefix, str(Path(os.path.realpath(python)).parent.parent)}
    binds = []
    for prefix in sorted(prefixes):
        real = os.path.realpath(prefix)
        if real != "/" and not real.startswith("/usr/") and Path(real).is_dir():
            binds.append(RuntimeBind(real, real))
            if prefix != real:
                binds.append(RuntimeBind(real, prefix))
    return binds


class LocalSandbox:
    """Runs `SandboxJob`s on this machine (see module docstring)."""

    name = "local"

    def __init__(
        self,
        isolation: Isolation = "auto",
        lock_dir: Path | None = None,
        health_command: list[str] | None = None,
        runtime_binds: list[str] = [],  # noqa: B006 - the agreed signature; never mutated
        *,
        base_dir: Path | None = None,
        python: str = sys.executable,
        nvidia_smi: str = "nvidia-smi",
        bwrap: str = "bwrap",
        health_timeout_s: float = 180.0,
        kill_grace_s: float = KILL_GRACE_S,
        gpu_lock_wait_s: float = 24 * 3600,
        gpu_index: int | Literal["auto"] | None = "auto",
    ) -> None:
        """`gpu_index`: the GPU for jobs that do not name one; "auto" is GPU 0 on a host with NVIDIA
        device nodes and none elsewhere (with bubblewrap a job sees no GPU at all unless it has one)."""
        if isolation not in ("auto", "bwrap", "unshare", "none"):
            raise SandboxConfigError(f"--isolation {isolation!r}: choose auto, bwrap, unshare or none")
        self.lock_dir = lock_dir or Path(tempfile.gettempdir())
        self.health_command = health_command
        self.base_dir = base_dir
        self.python = python
        self.nvidia_smi = nvidia_smi
        self.health_timeout_s = health_timeout_s
        self.kill_grace_s = kill_grace_s
        self.gpu_lock_wait_s = gpu_lock_wait_s
        if gpu_index == "auto":
            gpu_index = 0 if Path("/dev/nvidiactl").exists() else None
        self.gpu_index = gpu_index
        self.runtime_env = host_runtime_env(os.environ)
        self.runtime_binds = [self._checked_bind(spec) for spec in runtime_binds]
        self._gpus: dict[int, tuple[str, list[str]]] = {}
        self._bwrap = shutil.which(bwrap)
        self.isolation: Literal["bwrap", "unshare", "none"] = self._choose_isolation(isolation, bwrap)

    # -- configuration -------------------------------------------------------------------------------

    @staticmethod
    def _checked_bind(spec: str) -> RuntimeBind:
        bind = parse_runtime_bind(spec)
        check_runtime_bind(bind, home=os.path.expanduser("~"), resolved=os.path.realpath(bind.source))
        if not os.path.exists(bind.source):
            raise SandboxConfigError(f"runtime bind {spec!r}: {bind.source} does not exist on this machine")
        return bind

    def _choose_isolation(self, isolation: Isolation, bwrap: str) -> Literal["bwrap", "unshare", "none"]:
        """bubblewrap where it works, else unprivileged user namespaces (`unshare`), else none (said)."""
        from aka_graph.tools.evaluator.harness.isolate import unavailable

        if isolation == "none":
            return "none"
        if isolation == "unshare":
            why = unavailable()
            if why is not None:
                raise SandboxConfigError(
                    f"--isolation unshare: {why}; enable unprivileged user namespaces "
                    "(sysctl kernel.unprivileged_userns_clone=1) or pass --isolation none"
                )
            return "unshare"
        problem = "not installed" if self._bwrap is None else self._bwrap_self_test()
        if problem is None:
            return "bwrap"
        if isolation == "bwrap":
            raise SandboxConfigError(
                f"--isolation bwrap: bubblewrap ({bwrap}) {problem}; install the Debian package "
                "`bubblewrap`, or pass --isolation none to run jobs without isolation"
            )
        why = unavailable()
        if why is None:
            log.info("sandbox isolation: bubblewrap %s; jobs run in user namespaces (unshare)", problem)
            return "unshare"
        reason = f"bubblewrap {problem}, user namespaces {why}"
        if reason not in _ISOLATION_WARNED:  # once per process: one command may build several sandboxes
            _ISOLATION_WARNED.add(reason)
            log.warning("sandbox isolation: %s; jobs run WITHOUT isolation. %s", reason, HOW_TO)
        return "none"

    def _bwrap_self_test(self) -> str | None:
        """Why bubblewrap cannot run here, or None (checked once per bwrap binary and process)."""
        key = (self._bwrap or "", os.geteuid())
        if key not in _BWRAP_CHECKED:
            _BWRAP_CHECKED[key] = self._run_bwrap_self_test()
        return _BWRAP_CHECKED[key]

    def _run_bwrap_self_test(self) -> str | None:
        with tempfile.TemporaryDirectory(prefix="aka-bwrap-check-") as tmp:
            config = self._bwrap_config(tmp, {"PATH": DEFAULT_PATH}, [])
            try:
                proc = subprocess.run(
                    bwrap_argv(config, ["true"]), capture_output=True, text=True, timeout=30, check=False
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"failed to start ({exc})"
        if proc.returncode != 0:
            return f"does not work here: {proc.stderr.strip() or f'exit {proc.returncode}'}"
        return None

    def _bwrap_config(
        self, job_dir: str, env: dict[str, str], device_nodes: list[str], report_start: bool = False
    ) -> BwrapConfig:
        links = {}
        for name in TOP_LEVEL_SYSTEM_DIRS:
            path = Path(f"/{name}")
            if path.is_symlink():
                links[f"/{name}"] = os.readlink(path)
        return BwrapConfig(
            job_dir=job_dir,
            env=env,
            system_links=links,
            runtime_binds=(*interpreter_binds(self.python), *self.runtime_binds),
            device_nodes=tuple(device_nodes),
            drop_capabilities=os.geteuid() == 0,
            report_start=report_start,
            bwrap=self._bwrap or "bwrap",
        )

    def _gpu(self, index: int) -> tuple[str, list[str]]:
        """(UUID, device nodes) of GPU `index` (cached; raises with the reason when unavailable)."""
        if index not in self._gpus:
            try:
                query = [self.nvidia_smi, *NVIDIA_SMI_QUERY]
                proc = subprocess.run(query, capture_output=True, text=True, timeout=60, check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RuntimeError(f"cannot run {self.nvidia_smi} to resolve GPU {index}: {exc}") from exc
            if proc.returncode != 0:
                detail = proc.stderr.strip()
                raise RuntimeError(f"{self.nvidia_smi} failed (exit {proc.returncode}): {detail}")
            uuid, bus_id = select_gpu(proc.stdout, index)
            minor = device_minor_from_proc(bus_id)
            self._gpus[index] = (uuid, gpu_device_nodes(index if minor is None else minor))
        return self._gpus[index]

    # -- jobs -----------------------------------------------------------------------------------------

    def run(self, job: SandboxJob, results_dir: Path) -> SandboxResult:
        return self._run(job, results_dir, probe_on_failure=True)

    def _run(self, job: SandboxJob, results_dir: Path, probe_on_failure: bool) -> SandboxResult:
        started = time.monotonic()
        if job.gpu_index is None and self.gpu_index is not None:
            job = job.model_copy(update={"gpu_index": self.gpu_index})
        root = Path(tempfile.mkdtemp(prefix=f"aka-job-{_safe(job.label)}-", dir=self.base_dir))
        try:
            work = root / "work"
            (work / ".tmp").mkdir(parents=True)
            digests = stage_inputs(job.inputs, work)
            uuid, nodes = None, []
            if job.gpu_index is not None:
                try:
                    uuid, nodes = self._gpu(job.gpu_index)
                except (RuntimeError, ValueError) as exc:
                    return environment_failure(
                        "preflight", str(exc), wall_s=time.monotonic() - started, input_sha256=digests
                    )
            lock_key = uuid or (str(job.gpu_index) if job.gpu_index is not None else "default")
            env = job_environment(
                job.env, str(work), uuid, default_path=self._default_path(), runtime_env=self.runtime_env
            )
            if self.isolation != "none":  # the harness says in its result how its job was isolated
                env[SANDBOX_ISOLATION_VAR] = self.isolation
            if job.exclusive_gpu:
                try:
                    with GpuLock(lock_key, self.lock_dir, self.gpu_lock_wait_s):
                        outcome = self._execute(job, root, work, env, nodes)
                except TimeoutError as exc:
                    return environment_failure(
                        "run", str(exc), wall_s=time.monotonic() - started, input_sha256=digests
                    )
            else:
                outcome = self._execute(job, root, work, env, nodes)
            exit_code, timed_out, setup_error = outcome
            stdout, stderr = read_output(root / "stdout"), read_output(root / "stderr")
            results_dir.mkdir(parents=True, exist_ok=True)
            synced = sync_back(work, job.sync_back, results_dir)
            wall = time.monotonic() - started
            if setup_error is not None:
                return environment_failure(
                    "run", setup_error, wall_s=wall, stdout=stdout, stderr=stderr, input_sha256=digests
                )
            probe = (lambda: self.health(job.gpu_index)) if probe_on_failure else _healthy
            return judge_command(
                exit_code=exit_code,
                timed_out=timed_out,
                stdout=stdout,
                stderr=stderr,
                wall_s=wall,
                synced=synced,
                input_sha256=digests,
                probe=probe,
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def start(self, job: SandboxJob) -> LiveJob:
        """`job` started and left running (the warm evaluator, harness/serve.py): staged and isolated as
        `run` does, but the caller talks to it through its job directory and ends it (`LiveJob.stop`).
        It holds no GPU lock: the caller takes the lock around each request it sends. It dies with this
        process (bubblewrap's --die-with-parent, or PR_SET_PDEATHSIG on the command itself)."""
        from aka_graph.tools.evaluator.harness.isolate import die_with_parent

        if job.gpu_index is None and self.gpu_index is not None:
            job = job.model_copy(update={"gpu_index": self.gpu_index})
        root = Path(tempfile.mkdtemp(prefix=f"aka-job-{_safe(job.label)}-", dir=self.base_dir))
        work = root / "work"
        (work / ".tmp").mkdir(parents=True)
        stage_inputs(job.inputs, work)
        uuid, nodes = self._gpu(job.gpu_index) if job.gpu_index is not None else (None, [])
        lock_key = uuid or (str(job.gpu_index) if job.gpu_index is not None else "default")
        env = job_environment(
            job.env, str(work), uuid, default_path=self._default_path(), runtime_env=self.runtime_env
        )
        argv = list(job.argv)
        # user namespaces first where they work: a long-lived job evaluates many candidates, and only
        # there can each worker get a jail of its own (harness/isolate.py; bubblewrap's job cannot mount
        # the worker's /proc), without which one candidate could write where the next one, or the
        # service's answers, are read (serve.py refuses to evaluate with unjailed workers)
        from aka_graph.tools.evaluator.harness.isolate import unavailable

        isolation = "unshare" if self.isolation == "bwrap" and unavailable() is None else self.isolation
        if isolation != "none":
            env[SANDBOX_ISOLATION_VAR] = isolation
        if isolation == "bwrap":
            argv, env = bwrap_argv(self._bwrap_config(str(work), env, nodes), argv), {"PATH": DEFAULT_PATH}
        elif isolation == "unshare":
            argv = unshare_argv(str(work), argv, shutil.which("unshare") or "unshare")
        with (root / "stdout").open("wb") as out, (root / "stderr").open("wb") as err:
            proc = subprocess.Popen(
                argv,
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        return LiveJob(root, work, proc, lock_key, self.kill_grace_s)

    def _default_path(self) -> str:
        return f"{Path(self.python).parent}:{DEFAULT_PATH}"

    def _execute(
        self, job: SandboxJob, root: Path, work: Path, env: dict[str, str], nodes: list[str]
    ) -> tuple[int, bool, str | None]:
        """(exit code, timed out, isolation setup error or None)."""
        stdout_path, stderr_path = root / "stdout", root / "stderr"
        if self.isolation != "bwrap":
            argv = list(job.argv)
            if self.isolation == "unshare":
                argv = unshare_argv(str(work), argv, shutil.which("unshare") or "unshare")
            try:
                outcome = run_tree(
                    argv,
                    cwd=work,
                    env=env,
                    timeout_s=job.timeout_s,
                    stdout_path=stdout_path,
                    stderr_path=stderr_path,
                    grace_s=self.kill_grace_s,
                )
            except OSError as exc:  # the command itself cannot start: the shell's 126/127
                stderr_path.write_text(f"aka_graph sandbox: cannot execute {job.argv[0]!r}: {exc}\n")
                return (127 if isinstance(exc, FileNotFoundError) else 126), False, None
            if self.isolation == "unshare" and outcome.returncode in JAIL_EXIT and not outcome.timed_out:
                return outcome.returncode, False, f"the user-namespace jail: {JAIL_EXIT[outcome.returncode]}"
            return outcome.returncode, outcome.timed_out, None
        status_read, status_write = os.pipe()
        try:
            argv = bwrap_argv(self._bwrap_config(str(work), env, nodes, report_start=True), job.argv)
            outcome = run_tree(
                argv,
                cwd=work,
                env={"PATH": DEFAULT_PATH},
                timeout_s=job.timeout_s,
                stdout_path=stdout_path,
                stderr_path=stderr_path,
                stdin_fd=status_write,
                grace_s=self.kill_grace_s,
            )
            os.close(status_write)
            status_write = -1
            started = _read_available(status_read) == b"started"
        finally:
            os.close(status_read)
            if status_write >= 0:
                os.close(status_write)
        if not started and not outcome.timed_out:
            return (
                outcome.returncode,
                False,
                (
                    f"bubblewrap could not set up the sandbox (exit {outcome.returncode}): "
                    f"{read_output(stderr_path).strip()[-2000:]}"
                ),
            )
        return outcome.returncode, outcome.timed_out, None

    # -- health ---------------------------------------------------------------------------------------

    def health(self, gpu_index: int | None = None) -> HealthReport:
        """Run the health probe as a job (GPU probe when a GPU is involved or present, else CPU)."""
        if self.health_command is not None:
            job = SandboxJob(
                argv=self.health_command, timeout_s=self.health_timeout_s, gpu_index=gpu_index, label="health"
            )
        else:
            device = "cuda" if gpu_index is not None or Path("/dev/nvidiactl").exists() else "cpu"
            job = SandboxJob(
                argv=[self.python, HEALTH_SCRIPT, "--device", device],
                inputs={HEALTH_SCRIPT: Path(health_module.__file__)},
                timeout_s=self.health_timeout_s,
                gpu_index=gpu_index,
                label="health",
            )
        with tempfile.TemporaryDirectory(prefix="aka-health-") as tmp:
            return health_from_result(self._run(job, Path(tmp), probe_on_failure=False))


def _healthy() -> HealthReport:
    return HealthReport(healthy=True)


def _read_available(fd: int) -> bytes:
    """Whatever is buffered in a pipe whose writers have all gone."""
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "job"
