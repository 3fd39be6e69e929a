"""`SshSandbox`: run a job on a GPU host over SSH, always inside bubblewrap there.

Per job: upload the allowlist into a fresh `/tmp/aka-job-*` directory (hashing the bytes sent), run it
under the host's own `timeout` and GPU lock, download only the requested paths, remove the directory
(queued for retry if the host is gone). A lost connection or a sick host is exit 75, never a verdict.
"""

from __future__ import annotations

import logging
import posixpath
import secrets
import shlex
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import asyncssh

import aka_graph.tools.evaluator.health as health_module
from aka_graph.tools.evaluator.sandbox.async_runner import AsyncRunner
from aka_graph.tools.evaluator.sandbox.binds import check_runtime_bind, parse_runtime_bind
from aka_graph.tools.evaluator.sandbox.cleanup_queue import CleanupQueue
from aka_graph.tools.evaluator.sandbox.files import check_job_relative, copy_hashed, iter_input_files
from aka_graph.tools.evaluator.sandbox.gpu import gpu_lock_name, parse_gpu_selector
from aka_graph.tools.evaluator.sandbox.isolation import BwrapConfig, bwrap_argv, job_environment
from aka_graph.tools.evaluator.sandbox.job import HealthReport, SandboxJob, SandboxResult
from aka_graph.tools.evaluator.sandbox.outcome import environment_failure, health_from_result, judge_command
from aka_graph.tools.evaluator.sandbox.remote_script import JobScript, split_status
from aka_graph.tools.evaluator.sandbox.ssh_host import TRANSPORT_ERRORS, PreflightFailure, SshHost, SshTarget

log = logging.getLogger(__name__)
HEALTH_SCRIPT = "aka_health.py"
DEFAULT_PREFLIGHT = "python3 -c 'import torch, triton'"


class _Failed(Exception):
    """Internal: abort the job as an environment failure at `stage`."""

    def __init__(self, stage: str, diagnostic: str) -> None:
        super().__init__(diagnostic)
        self.stage = stage


@dataclass
class _Ran:
    exit_code: int
    timed_out: bool
    stdout: str
    stderr: str
    synced: dict[str, Path]
    digests: dict[str, str]
    wall_s: float


class SshSandbox:
    """Runs `SandboxJob`s on `target`'s GPU `gpu_index` (see module docstring)."""

    name = "ssh"

    def __init__(
        self,
        target: str,
        gpu_index: int,
        init_command: str | None = None,
        runtime_binds: list[str] = [],  # noqa: B006 - the agreed signature; never mutated
        health_command: list[str] | None = None,
        *,
        ssh_config: Path | None = None,
        known_hosts: Path | None = None,
        preflight_command: str | None = DEFAULT_PREFLIGHT,
        python: str = "python3",
        nvidia_smi: str = "nvidia-smi",
        cleanup_queue: Path | None = None,
        remote_tmp: str = "/tmp",
        connect_timeout_s: float = 15.0,
        keepalive_s: float = 5.0,
        kill_grace_s: float = 2.0,
        gpu_lock_wait_s: float = 24 * 3600,
        health_timeout_s: float = 180.0,
    ) -> None:
        self.target = SshTarget.parse(target)
        self.gpu_index = parse_gpu_selector(gpu_index)
        binds = [parse_runtime_bind(spec) for spec in runtime_binds]
        for bind in binds:
            check_runtime_bind(bind)  # lexically now; resolved on the host again before the first job
        self.health_command = health_command
        self.python = python
        self.remote_tmp = remote_tmp.rstrip("/") or "/tmp"
        self.kill_grace_s = kill_grace_s
        self.gpu_lock_wait_s = gpu_lock_wait_s
        self.health_timeout_s = health_timeout_s
        self.queue = CleanupQueue(cleanup_queue)
        self.host = SshHost(
            target=self.target,
            gpu_index=self.gpu_index,
            runtime_binds=binds,
            init_command=init_command,
            preflight_command=preflight_command,
            nvidia_smi=nvidia_smi,
            ssh_config=ssh_config,
            known_hosts=known_hosts,
            connect_timeout_s=connect_timeout_s,
            keepalive_s=keepalive_s,
        )
        self._runner = AsyncRunner()

    # -- public API -----------------------------------------------------------------------------------

    def run(self, job: SandboxJob, results_dir: Path) -> SandboxResult:
        return self._run(job, results_dir, probe_on_failure=True)

    def health(self, gpu_index: int | None = None) -> HealthReport:
        """Run the health probe on the host as a job (the GPU probe unless `health_command` overrides it)."""
        if self.health_command is not None:
            job = SandboxJob(
                argv=self.health_command, timeout_s=self.health_timeout_s, label="health", gpu_index=gpu_index
            )
        else:
            job = SandboxJob(
                argv=[self.python, HEALTH_SCRIPT, "--device", "cuda"],
                inputs={HEALTH_SCRIPT: Path(health_module.__file__)},
                timeout_s=self.health_timeout_s,
                gpu_index=gpu_index,
                label="health",
            )
        with tempfile.TemporaryDirectory(prefix="aka-health-") as tmp:
            return health_from_result(self._run(job, Path(tmp), probe_on_failure=False))

    def preflight(self) -> None:
        """Connect and check the host now (raises `RuntimeBindError`/`GpuSelectionError` on bad config)."""
        self._runner.call(self.host.connection())

    def disconnect(self) -> None:
        """Drop the connection: jobs in flight end as environment failures and the host stops them."""
        self._runner.call(self._close())

    def close(self) -> None:
        self.disconnect()
        self._runner.close()

    async def _close(self) -> None:
        self.host.drop()

    def __enter__(self) -> SshSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the job --------------------------------------------------------------------------------------

    def _run(self, job: SandboxJob, results_dir: Path, probe_on_failure: bool) -> SandboxResult:
        started = time.monotonic()
        outcome = self._runner.call(self._job(job, results_dir, started))
        if isinstance(outcome, SandboxResult):
            return outcome
        probe = (
            (lambda: self.health(job.gpu_index)) if probe_on_failure else (lambda: HealthReport(healthy=True))
        )
        return judge_command(
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            wall_s=outcome.wall_s,
            synced=outcome.synced,
            input_sha256=outcome.digests,
            probe=probe,
        )

    async def _job(self, job: SandboxJob, results_dir: Path, started: float) -> SandboxResult | _Ran:
        try:
            conn, sftp = await self.host.connection()
        except PreflightFailure as exc:
            return environment_failure("preflight", str(exc), wall_s=time.monotonic() - started)
        except TRANSPORT_ERRORS as exc:
            self.host.drop()
            return environment_failure(
                "transport",
                f"cannot reach {self.target}: {type(exc).__name__}: {exc}",
                wall_s=time.monotonic() - started,
            )
        await self._retry_cleanups(conn)
        root = f"{self.remote_tmp}/aka-job-{_safe(job.label)}-{secrets.token_hex(6)}"
        self.queue.add(str(self.target), root)
        digests: dict[str, str] = {}
        try:
            digests = await self._upload(sftp, job, root)
            ran = await self._execute(conn, job, root, started)
            results_dir.mkdir(parents=True, exist_ok=True)
            synced = await self._download(sftp, root + "/work", job.sync_back, results_dir)
            return _Ran(*ran, synced=synced, digests=digests, wall_s=time.monotonic() - started)
        except _Failed as exc:
            return environment_failure(
                exc.stage, str(exc), wall_s=time.monotonic() - started, input_sha256=digests
            )
        finally:
            await self._cleanup(root)

    async def _upload(self, sftp: asyncssh.SFTPClient, job: SandboxJob, root: str) -> dict[str, str]:
        digests: dict[str, str] = {}
        try:
            await sftp.mkdir(root, asyncssh.SFTPAttrs(permissions=0o700))
            made = {root}
            for directory in (root + "/work", root + "/work/.tmp"):
                await sftp.mkdir(directory)
                made.add(directory)
            for rel, source in iter_input_files(job.inputs):
                remote = f"{root}/work/{rel}"
                parent = posixpath.dirname(remote)
                missing = []
                while parent not in made:
                    missing.append(parent)
                    parent = posixpath.dirname(parent)
                for directory in reversed(missing):
                    await sftp.mkdir(directory)
                    made.add(directory)
                mode = stat.S_IMODE(source.stat().st_mode)
                chunks: list[bytes] = []
                digests[rel] = copy_hashed(source, chunks.append)
                async with sftp.open(remote, "wb", asyncssh.SFTPAttrs(permissions=mode)) as handle:
                    await handle.write(b"".join(chunks))
        except TRANSPORT_ERRORS as exc:
            self.host.drop()
            raise _Failed(
                "upload", f"upload to {self.target}:{root} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return digests

    async def _execute(
        self, conn: asyncssh.SSHClientConnection, job: SandboxJob, root: str, started: float
    ) -> tuple[int, bool, str, str]:
        facts = self.host.facts
        assert facts is not None
        work = root + "/work"
        uuid = facts.gpu_uuid
        if job.gpu_index is not None and job.gpu_index != self.gpu_index:
            raise _Failed(
                "preflight", f"job asks for GPU {job.gpu_index} but this sandbox holds GPU {self.gpu_index}"
            )
        config = BwrapConfig(
            job_dir=work,
            env=job_environment(job.env, work, uuid, default_path=facts.path, runtime_env=facts.runtime_env),
            system_links=facts.links,
            runtime_binds=tuple(facts.binds),
            device_nodes=tuple(facts.device_nodes),
            drop_capabilities=facts.euid == 0,
            report_start=True,
            bwrap=facts.tools["bwrap"],
        )
        script = JobScript(
            root=root,
            sandbox_argv=bwrap_argv(config, job.argv),
            timeout_s=job.timeout_s,
            kill_grace_s=self.kill_grace_s,
            lock_path=f"{self.remote_tmp}/{gpu_lock_name(uuid)}" if job.exclusive_gpu else None,
            lock_wait_s=self.gpu_lock_wait_s,
        )
        limit = job.timeout_s + self.kill_grace_s + 60 + (self.gpu_lock_wait_s if job.exclusive_gpu else 0)
        sftp = self.host.sftp
        assert sftp is not None
        begun = time.monotonic()
        try:
            async with sftp.open(f"{root}/job.sh", "w") as handle:
                await handle.write(script.render())
            await self.host.run_job(root, limit)
            elapsed = time.monotonic() - begun
            stdout = await self._read_text(sftp, f"{root}/stdout")
            raw_stderr = await self._read_text(sftp, f"{root}/stderr")
        except TRANSPORT_ERRORS as exc:
            self.host.drop()
            raise _Failed(
                "transport", f"connection to {self.target} lost during the job: {type(exc).__name__}: {exc}"
            ) from exc
        stderr, rc, was_started, error = split_status(raw_stderr)
        if rc is None:
            raise _Failed("run", f"the job on {self.target} ended without its status line: {stderr[-1500:]}")
        if error:
            raise _Failed("run", f"sandbox wrapper on {self.target} failed: {error}")
        timed_out = rc in (124, 137) and elapsed >= job.timeout_s
        if not was_started and not timed_out:
            raise _Failed(
                "run",
                f"bubblewrap could not set up the sandbox on {self.target} (exit {rc}): "
                f"{stderr.strip()[-2000:]}",
            )
        return rc, timed_out, stdout, stderr

    @staticmethod
    async def _read_text(sftp: asyncssh.SFTPClient, path: str) -> str:
        async with sftp.open(path, "rb") as handle:
            data = await handle.read()
        return bytes(data).decode("utf-8", errors="replace")

    async def _download(
        self, sftp: asyncssh.SFTPClient, work: str, paths: list[str], results_dir: Path
    ) -> dict[str, Path]:
        synced: dict[str, Path] = {}
        try:
            for requested in paths:
                rel = check_job_relative(requested, "sync_back path")
                remote = f"{work}/{rel}"
                try:
                    attrs = await sftp.lstat(remote)
                    real = await sftp.realpath(remote)
                except asyncssh.SFTPNoSuchFile:
                    continue
                if attrs.type == asyncssh.FILEXFER_TYPE_SYMLINK or not str(real).startswith(work + "/"):
                    continue  # never follow a link out of the job directory
                target = results_dir / rel
                await self._fetch(sftp, remote, attrs, target)
                synced[requested] = target
        except TRANSPORT_ERRORS as exc:
            self.host.drop()
            raise _Failed(
                "download", f"download from {self.target} failed: {type(exc).__name__}: {exc}"
            ) from exc
        return synced

    async def _fetch(
        self, sftp: asyncssh.SFTPClient, remote: str, attrs: asyncssh.SFTPAttrs, target: Path
    ) -> None:
        if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
            target.mkdir(parents=True, exist_ok=True)
            for entry in await sftp.readdir(remote):
                name = str(entry.filename)
                if name not in (".", ".."):
                    await self._fetch(sftp, f"{remote}/{name}", entry.attrs, target / name)
        elif attrs.type == asyncssh.FILEXFER_TYPE_REGULAR:
            target.parent.mkdir(parents=True, exist_ok=True)
            await sftp.get(remote, str(target))

    # -- cleanup --------------------------------------------------------------------------------------

    async def _cleanup(self, root: str) -> None:
        """Remove the job root: over SFTP (no shell start-up cost), `rm -rf` if that is refused."""
        conn, sftp = self.host.conn, self.host.sftp
        try:
            if conn is None or sftp is None or conn.is_closed():
                raise ConnectionError("not connected")
            try:
                await sftp.rmtree(root)
            except asyncssh.SFTPError:
                result = await conn.run(f"rm -rf -- {shlex.quote(root)}", check=False, timeout=30)
                if result.exit_status != 0:
                    raise OSError(str(result.stderr).strip()) from None
        except (*TRANSPORT_ERRORS, ConnectionError) as exc:
            log.warning("could not remove %s:%s (%s); queued for the next job", self.target, root, exc)
            self.queue.mark_failed(str(self.target), root)
            return
        self.queue.remove(str(self.target), root)

    async def _retry_cleanups(self, conn: asyncssh.SSHClientConnection) -> None:
        pending = self.queue.pending(str(self.target))
        if not pending:
            return
        try:
            result = await conn.run(
                "rm -rf -- " + " ".join(shlex.quote(p) for p in pending), check=False, timeout=60
            )
        except TRANSPORT_ERRORS as exc:
            log.warning("retrying queued cleanups on %s failed: %s", self.target, exc)
            return
        if result.exit_status == 0:
            for path in pending:
                self.queue.remove(str(self.target), path)
                log.info("removed leftover job directory %s:%s", self.target, path)


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in label)[:40] or "job"
