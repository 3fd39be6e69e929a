"""One SSH host as the sandbox sees it: the connection (kept open between jobs) and the host's facts.

Facts are read once per connection (home, PATH, tools, GPUs, runtime binds resolved on the host), the
init command and the preflight run once per sandbox; none of them ever touch candidate code.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh

from aka_graph.tools.evaluator.sandbox.binds import RuntimeBind, RuntimeBindError, check_runtime_bind
from aka_graph.tools.evaluator.sandbox.gpu import gpu_device_nodes, select_gpu
from aka_graph.tools.evaluator.sandbox.remote_script import EXECUTOR_SCRIPT, host_facts_script, parse_facts

TRANSPORT_ERRORS = (asyncssh.Error, OSError, asyncio.TimeoutError, EOFError, ConnectionError)


class PreflightFailure(Exception):
    """The host cannot run jobs right now (missing tools, failed init or preflight): exit 75."""


@dataclass(frozen=True)
class SshTarget:
    """`[user@]host[:port]`; anything left unset comes from the OpenSSH client config."""

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, target: str) -> SshTarget:
        user, _, rest = target.rpartition("@")
        host, _, port = rest.partition(":")
        if not host or (port and not port.isdigit()):
            raise ValueError(
                f"--sandbox-ssh {target!r}: expected [user@]host[:port] or an alias from ~/.ssh/config"
            )
        return cls(host=host, user=user or None, port=int(port) if port else None)

    def __str__(self) -> str:
        return f"{self.user + '@' if self.user else ''}{self.host}{':' + str(self.port) if self.port else ''}"


@dataclass
class HostFacts:
    home: str
    path: str
    euid: int
    tools: dict[str, str]
    links: dict[str, str]
    gpu_uuid: str
    device_nodes: list[str]
    binds: list[RuntimeBind] = field(default_factory=list)
    runtime_env: dict[str, str] = field(default_factory=dict)


@dataclass
class SshHost:
    """Connection management and host facts for one target (used from the sandbox's event loop)."""

    target: SshTarget
    gpu_index: int
    runtime_binds: list[RuntimeBind]
    init_command: str | None
    preflight_command: str | None
    nvidia_smi: str
    ssh_config: Path | None
    known_hosts: Path | None
    connect_timeout_s: float
    keepalive_s: float
    conn: asyncssh.SSHClientConnection | None = None
    sftp: asyncssh.SFTPClient | None = None
    facts: HostFacts | None = None
    prepared: bool = False
    executor: asyncssh.SSHClientProcess | None = None  # type: ignore[type-arg]
    _waiters: dict[str, asyncio.Future[None]] = field(default_factory=dict)
    _reader: asyncio.Task[None] | None = None
    _lock: asyncio.Lock | None = None

    async def connection(self) -> tuple[asyncssh.SSHClientConnection, asyncssh.SFTPClient]:
        """The open connection and SFTP session, reconnecting (and re-reading facts) if it was lost."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.conn is None or self.conn.is_closed():
                self.drop()
                options: dict[str, object] = {
                    "connect_timeout": self.connect_timeout_s,
                    "keepalive_interval": self.keepalive_s,
                    "keepalive_count_max": 3,
                }
                if self.ssh_config is not None:
                    options["config"] = [str(self.ssh_config)]
                if self.known_hosts is not None:
                    options["known_hosts"] = str(self.known_hosts)
                if self.target.user:
                    options["username"] = self.target.user
                if self.target.port:
                    options["port"] = self.target.port
                conn = await asyncio.wait_for(
                    asyncssh.connect(self.target.host, **options),
                    self.connect_timeout_s + 5,  # type: ignore[arg-type]
                )
                try:
                    sftp = await conn.start_sftp_client()
                    self.facts = await self._read_facts(conn)
                except BaseException:
                    conn.abort()
                    raise
                self.conn, self.sftp = conn, sftp
                await self._start_executor(conn)
                self.prepared = False  # a new connection may be a rebooted host: init and preflight again
            assert self.sftp is not None
            if not self.prepared:
                await self._prepare(self.conn)
                self.prepared = True
            return self.conn, self.sftp

    def drop(self) -> None:
        if self.conn is not None:
            self.conn.abort()
        self.conn = self.sftp = None
        self.executor = None
        self._fail_waiters(ConnectionError(f"connection to {self.target} closed"))

    async def _start_executor(self, conn: asyncssh.SSHClientConnection) -> None:
        self.executor = await conn.create_process(f"sh -c {shlex.quote(EXECUTOR_SCRIPT)}")
        self._reader = asyncio.get_running_loop().create_task(self._read_executor(self.executor))

    async def _read_executor(self, process: asyncssh.SSHClientProcess) -> None:  # type: ignore[type-arg]
        try:
            async for line in process.stdout:
                _, _, root = str(line).strip().partition(" ")
                waiter = self._waiters.pop(root, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
        except TRANSPORT_ERRORS:
            pass
        if self.executor is process:
            self._fail_waiters(ConnectionError(f"the job runner on {self.target} stopped"))

    def _fail_waiters(self, exc: Exception) -> None:
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            if not waiter.done():
                waiter.set_exception(exc)

    async def run_job(self, root: str, limit_s: float) -> None:
        """Have the executor run `root/job.sh`; return when it is done (raises on transport failure)."""
        if self.executor is None or self.executor.stdin.is_closing():
            raise ConnectionError(f"no job runner on {self.target}")
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters[root] = waiter
        self.executor.stdin.write(root + "\n")
        try:
            await asyncio.wait_for(waiter, limit_s)
        finally:
            self._waiters.pop(root, None)

    async def _read_facts(self, conn: asyncssh.SSHClientConnection) -> HostFacts:
        script = host_facts_script(self.nvidia_smi, [b.source for b in self.runtime_binds])
        result = await conn.run(f"sh -c {shlex.quote(script)}", check=False, timeout=60)
        facts = parse_facts(str(result.stdout))
        if "home" not in facts:
            raise PreflightFailure(f"host facts probe failed on {self.target}: {result.stderr}")
        home = facts["home"][0]
        binds = []
        for index, bind in enumerate(self.runtime_binds):
            resolved = facts.get(f"bind.{index}", [""])[0]
            if not resolved:
                raise RuntimeBindError(
                    f"runtime bind {bind.as_flag()!r}: {bind.source} does not exist on {self.target}"
                )
            check_runtime_bind(bind, home=home, resolved=resolved)
            binds.append(bind)
        gpu_output = "\n".join(facts.get("gpu", []))
        if not any(line.strip().split(",")[0].strip().isdigit() for line in facts.get("gpu", [])):
            raise PreflightFailure(f"{self.nvidia_smi} on {self.target} lists no GPU: {gpu_output.strip()}")
        uuid, bus_id = select_gpu(gpu_output, self.gpu_index, where=str(self.target))
        minors = {
            key.removeprefix("minor.").lower(): values[0]
            for key, values in facts.items()
            if key.startswith("minor.")
        }
        minor_text = minors.get(bus_id[4:].lower()) or minors.get(bus_id.lower())
        minor = int(minor_text) if minor_text and minor_text.isdigit() else self.gpu_index
        return HostFacts(
            home=home,
            path=facts.get("path", ["/usr/local/bin:/usr/bin:/bin"])[0],
            euid=int(facts.get("euid", ["-1"])[0] or -1),
            tools={k.removeprefix("tool."): v[0] for k, v in facts.items() if k.startswith("tool.")},
            links={k.removeprefix("link."): v[0] for k, v in facts.items() if k.startswith("link.")},
            gpu_uuid=uuid,
            device_nodes=gpu_device_nodes(minor),
            binds=binds,
            runtime_env={
                k.removeprefix("env."): v[0] for k, v in facts.items() if k.startswith("env.") and v[0]
            },
        )

    async def _prepare(self, conn: asyncssh.SSHClientConnection) -> None:
        assert self.facts is not None
        missing = [tool for tool in ("bwrap", "timeout", "flock") if not self.facts.tools.get(tool)]
        if missing:
            raise PreflightFailure(
                f"{', '.join(missing)} not found on {self.target}; jobs there must run inside bubblewrap "
                "(install the Debian packages bubblewrap, coreutils, util-linux)"
            )
        for label, command in (("init command", self.init_command), ("preflight", self.preflight_command)):
            if command:
                result = await conn.run(f"cd / && sh -c {shlex.quote(command)}", check=False, timeout=600)
                if result.exit_status != 0:
                    raise PreflightFailure(
                        f"{label} {command!r} failed on {self.target} (exit {result.exit_status}): "
                        f"{str(result.stderr).strip()[-1500:]}"
                    )
