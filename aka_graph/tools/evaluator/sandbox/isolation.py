"""The bubblewrap command line that isolates a job (the same builder serves local and SSH hosts).

No network, own PID/IPC/UTS namespaces, system paths and runtime binds read-only, only the job
directory writable on the host (plus a private, discarded tmpfs at /tmp), only the assigned GPU's
device nodes, and an environment that is exactly the job's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from aka_graph.tools.evaluator.sandbox.binds import RuntimeBind

# merged-/usr distributions make these symlinks into /usr; others have real directories.
TOP_LEVEL_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# What programs need from /etc (dynamic linker, users, TLS roots, time zone), never the whole of it:
# /etc also holds host keys and shadow passwords.
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "localtime",
    "timezone",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "os-release",
    "mime.types",
    "nvidia",
    "OpenCL",
    "vulkan",
)
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_HOSTNAME = "aka-sandbox"
# Proof that the sandbox was set up: bubblewrap reports its child before mounting, so a setup failure
# would look like the command's own exit 1. bwrap's stdin is a write-only pipe/file; the reporter writes
# "started" to it and hands the command /dev/null as stdin instead.
START_REPORTER = ("/bin/sh", "-c", 'printf started >&0 && exec "$@" </dev/null', "aka-sandbox")


@dataclass(frozen=True)
class BwrapConfig:
    """Everything that decides a job's view of the host."""

    job_dir: str
    env: Mapping[str, str]
    system_links: Mapping[str, str] = field(default_factory=dict)  # "/bin" -> "usr/bin" where a symlink
    runtime_binds: tuple[RuntimeBind, ...] = ()
    device_nodes: tuple[str, ...] = ()
    drop_capabilities: bool = True  # running as root: drop every capability inside
    report_start: bool = False  # write "started" to stdin (a pipe or file) just before the command runs
    bwrap: str = "bwrap"


def bwrap_argv(config: BwrapConfig, argv: Iterable[str]) -> list[str]:
    """The full `bwrap ... -- argv` command line for `config`."""
    args = [
        config.bwrap,
        "--die-with-parent",
        # No --new-session: jobs never have a controlling terminal, and staying in the caller's process
        # group lets one group kill reach bubblewrap's inner process even mid-setup, before
        # --die-with-parent is armed there.
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        # no cgroup namespace: the harness reads its memory cgroup's limit (harness/hostmem.py), and in
        # a namespace of its own a Slurm job's or a systemd slice's cgroup reads as the unlimited root
        "--hostname",
        SANDBOX_HOSTNAME,
    ]
    if config.drop_capabilities:
        args += ["--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in TOP_LEVEL_SYSTEM_DIRS:
        target = config.system_links.get(f"/{name}")
        if target is not None:
            args += ["--symlink", target, f"/{name}"]
        else:
            args += ["--ro-bind-try", f"/{name}", f"/{name}"]
    for entry in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    args += ["--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for bind in config.runtime_binds:
        args += ["--ro-bind", bind.source, bind.dest]
    for node in config.device_nodes:
        args += ["--dev-bind-try", node, node]
    args += ["--bind", config.job_dir, config.job_dir, "--remount-ro", "/"]
    args += ["--chdir", config.job_dir, "--clearenv"]
    for key, value in sorted(config.env.items()):
        args += ["--setenv", key, value]
    if config.report_start:
        argv = [*START_REPORTER, *argv]
    return [*args, "--", *argv]


# How the host's GPU runtime is found and kept safe (driver library path, NVLink-multicast guards some
# hosts require in every process): taken from the host when set there, unless the job sets them itself.
HOST_RUNTIME_VARS = (
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "TRITON_LIBCUDA_PATH",
    "TRITON_PTXAS_PATH",
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
    "CUTLASS_DIR",  # where the cutlass language's headers are (harness/languages/cutlass_pkgs.py)
    "CUTLASS_PATH",
)


def host_runtime_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {key: environ[key] for key in HOST_RUNTIME_VARS if environ.get(key)}


def job_environment(
    job_env: Mapping[str, str],
    job_dir: str,
    gpu_uuid: str | None,
    default_path: str = DEFAULT_PATH,
    runtime_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Exactly the job's environment plus what the sandbox must set (PATH, HOME, TMPDIR, GPU runtime)."""
    env = {**(runtime_env or {}), **job_env}
    env.setdefault("PATH", default_path)
    env["HOME"] = job_dir
    env["TMPDIR"] = f"{job_dir}/.tmp"
    if gpu_uuid is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu_uuid
    return env


def unshare_argv(job_dir: str, argv: Iterable[str], unshare: str = "unshare") -> list[str]:
    """The job under unprivileged user namespaces, where bubblewrap is missing (the harness's worker
    jail, harness/isolate.py): own PID namespace (everything dies with it), no network, every file
    system read-only but the job directory. The environment is the caller's (exactly the job's)."""
    from aka_graph.tools.evaluator.harness.isolate import JAIL, OUTER

    # JAIL's second argument lists directories to cover; the job hides nothing beyond the read-only view
    return [unshare, *OUTER, "sh", "-c", JAIL, "jail", job_dir, "", *argv]
