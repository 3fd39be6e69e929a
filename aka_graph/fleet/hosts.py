"""The hosts file: which SSH GPU hosts form the pool, and which of their GPUs the fleet may use.

TOML, one `[[host]]` table per host; `[defaults]` holds keys every host shares (any host key but name,
target and gpus). Example:

    [defaults]
    ssh_config = "~/.ssh/config"        # OpenSSH aliases are honoured
    init_command = "source /opt/venv/bin/activate"

    [[host]]
    name = "h200-a"                      # the name status and the lease log show
    target = "ops@h200-a.example.com"    # [user@]host or an ~/.ssh/config alias
    gpus = [0, 1, 2, 3, 4, 5, 6, 7]      # nvidia-smi indices

Each (host, GPU) becomes one `SshSandbox` (asyncssh, bubblewrap on the host), built lazily.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aka_graph.tools.evaluator.sandbox.ssh import DEFAULT_PREFLIGHT

HOST_KEYS_WITH_DEFAULTS = (
    "ssh_config",
    "known_hosts",
    "init_command",
    "runtime_binds",
    "health_command",
    "preflight_command",
    "python",
    "nvidia_smi",
    "remote_tmp",
    "cleanup_queue",
    "connect_timeout_s",
    "health_timeout_s",
)


class HostsFileError(ValueError):
    """The hosts file is unusable; the message says where and how to fix it."""


class HostSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")
    target: str = Field(min_length=1, description="[user@]host or an OpenSSH config alias")
    gpus: list[int] = Field(min_length=1)
    ssh_config: Path | None = None
    known_hosts: Path | None = None
    init_command: str | None = None
    runtime_binds: list[str] = Field(default_factory=list)
    health_command: list[str] | None = None
    preflight_command: str | None = DEFAULT_PREFLIGHT
    python: str = "python3"
    nvidia_smi: str = "nvidia-smi"
    remote_tmp: str = "/tmp"
    cleanup_queue: Path | None = None
    connect_timeout_s: float = Field(default=15.0, gt=0)
    health_timeout_s: float = Field(default=180.0, gt=0)

    @field_validator("gpus")
    @classmethod
    def _distinct_indices(cls, value: list[int]) -> list[int]:
        if any(g < 0 for g in value) or len(set(value)) != len(value):
            raise ValueError("gpus must be distinct nvidia-smi indices (0, 1, ...)")
        return value

    @field_validator("ssh_config", "known_hosts", "cleanup_queue")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    def sandbox(self, gpu: int) -> Any:
        """The `SshSandbox` for one of this host's GPUs (connects on its first job)."""
        from aka_graph.tools.evaluator.sandbox.ssh import SshSandbox

        return SshSandbox(
            self.target,
            gpu,
            init_command=self.init_command,
            runtime_binds=list(self.runtime_binds),
            health_command=self.health_command,
            ssh_config=self.ssh_config,
            known_hosts=self.known_hosts,
            preflight_command=self.preflight_command,
            python=self.python,
            nvidia_smi=self.nvidia_smi,
            cleanup_queue=self.cleanup_queue,
            remote_tmp=self.remote_tmp,
            connect_timeout_s=self.connect_timeout_s,
            health_timeout_s=self.health_timeout_s,
        )


def parse_hosts(data: dict[str, Any], source: str = "hosts file") -> list[HostSpec]:
    unknown = set(data) - {"defaults", "host"}
    if unknown:
        raise HostsFileError(f"{source}: unknown table(s) {sorted(unknown)}; use [defaults] and [[host]]")
    defaults = data.get("defaults", {})
    bad = set(defaults) - set(HOST_KEYS_WITH_DEFAULTS)
    if bad:
        raise HostsFileError(
            f"{source}: [defaults] cannot set {sorted(bad)}; allowed: {', '.join(HOST_KEYS_WITH_DEFAULTS)}"
        )
    entries = data.get("host", [])
    if not entries:
        raise HostsFileError(f"{source}: no [[host]] entries; add one with name, target and gpus")
    hosts: list[HostSpec] = []
    for i, entry in enumerate(entries, start=1):
        try:
            hosts.append(HostSpec(**{**defaults, **entry}))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "entry"
            raise HostsFileError(
                f"{source}: host #{i} ({entry.get('name', '?')}): {where}: {first['msg']}"
            ) from e
    names = [h.name for h in hosts]
    if len(set(names)) != len(names):
        raise HostsFileError(f"{source}: host names must be unique, got {names}")
    return hosts


def load_hosts(path: Path) -> list[HostSpec]:
    """Read and check a hosts file (errors name the file, the host and the key)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise HostsFileError(
            f"hosts file {path} does not exist; write one (see `fleet work --help`)"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise HostsFileError(f"hosts file {path} is not valid TOML: {e}") from None
    return parse_hosts(data, str(path))
