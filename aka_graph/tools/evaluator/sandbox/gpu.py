"""GPU selection for jobs: index -> UUID, the device nodes a job may see, and the host-wide timing lock.

Jobs see their GPU by UUID (`CUDA_VISIBLE_DEVICES=GPU-...`) so an index renumbering can never point a
job at another card, and one timing job per GPU runs at a time across all campaigns on a host.
"""

from __future__ import annotations

import fcntl
import glob
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

NVIDIA_SMI_QUERY = ("--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader")
SHARED_NVIDIA_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
_SELECTOR_HINT = (
    "give the integer index nvidia-smi prints for the GPU (e.g. --sandbox-ssh-gpu 0); MIG instances and "
    "UUID selectors are not supported because the sandbox resolves the index to the GPU's UUID itself"
)


class GpuSelectionError(ValueError):
    """The requested GPU does not exist or was named in an unsupported way."""


def parse_gpu_selector(value: str | int, flag: str = "--sandbox-ssh-gpu") -> int:
    """An integer GPU index; UUIDs (`GPU-...`), MIG selectors (`MIG-...`, `0:1`) are refused clearly."""
    if isinstance(value, int):
        index = value
    else:
        text = value.strip()
        if text.upper().startswith(("MIG-", "GPU-")) or ":" in text or "/" in text:
            raise GpuSelectionError(f"{flag} {value!r}: {_SELECTOR_HINT}")
        if not re.fullmatch(r"\d+", text):
            raise GpuSelectionError(f"{flag} {value!r} is not a GPU index; {_SELECTOR_HINT}")
        index = int(text)
    if index < 0:
        raise GpuSelectionError(f"{flag} {value!r} is negative; {_SELECTOR_HINT}")
    return index


def parse_nvidia_smi(output: str) -> dict[int, tuple[str, str]]:
    """`index, uuid[, pci.bus_id]` lines -> {index: (uuid, bus_id)}."""
    gpus: dict[int, tuple[str, str]] = {}
    for line in output.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].startswith("GPU-"):
            gpus[int(fields[0])] = (fields[1], fields[2] if len(fields) > 2 else "")
    return gpus


def select_gpu(output: str, index: int, where: str = "this host") -> tuple[str, str]:
    """(uuid, bus_id) of GPU `index` in nvidia-smi output, or a `GpuSelectionError` naming the choices."""
    gpus = parse_nvidia_smi(output)
    if index not in gpus:
        known = ", ".join(f"{i} ({u})" for i, (u, _) in sorted(gpus.items())) or "none"
        raise GpuSelectionError(f"GPU index {index} not found on {where}; nvidia-smi lists: {known}")
    return gpus[index]


def device_minor_from_proc(bus_id: str, proc_root: Path = Path("/proc/driver/nvidia/gpus")) -> int | None:
    """The /dev/nvidia<minor> of a GPU from the driver's proc entry (indices and minors can differ)."""
    if not bus_id:
        return None
    for candidate in (bus_id, bus_id.lower(), bus_id[4:].lower() if len(bus_id) > 12 else bus_id):
        info = proc_root / candidate / "information"
        try:
            match = re.search(r"Device Minor:\s*(\d+)", info.read_text())
        except OSError:
            continue
        if match:
            return int(match.group(1))
    return None


def gpu_device_nodes(minor: int) -> list[str]:
    """The device nodes a job on GPU `minor` needs: its own card plus the shared control nodes."""
    return [f"/dev/nvidia{minor}", *SHARED_NVIDIA_NODES]


def gpu_lock_name(key: str) -> str:
    """Lock file name for a GPU (its UUID, or its index where no UUID is known)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key)
    return f"aka_graph-gpu{safe}.lock"


GPU_DEVICE_GLOBS = ("/dev/nvidia[0-9]*", "/dev/kfd")


def host_has_gpu(patterns: tuple[str, ...] = GPU_DEVICE_GLOBS) -> bool:
    """Whether this host has a GPU device node at all (an NVIDIA card or AMD's kfd)."""
    return any(glob.glob(pattern) for pattern in patterns)


def needs_gpu_lock(device: str, local: bool, has_gpu: Callable[[], bool] = host_has_gpu) -> bool:
    """Whether an evaluation job takes the host-wide GPU lock: `cuda` always; `auto` unless it runs on
    this host and this host has no GPU (it will run on the CPU, and must not wait behind a GPU job)."""
    if device == "cpu":
        return False
    if device == "auto" and local:
        return has_gpu()
    return True


class GpuLock:
    """Host-wide exclusive lock for one GPU (`fcntl.flock`), held for a whole timing job."""

    def __init__(self, key: str, lock_dir: Path = Path("/tmp"), wait_s: float = 24 * 3600) -> None:
        self.path = lock_dir / gpu_lock_name(key)
        self.wait_s = wait_s
        self._fd: int | None = None

    def __enter__(self) -> GpuLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        deadline = time.monotonic() + self.wait_s
        delay = 0.01
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as busy:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise TimeoutError(f"GPU lock {self.path} still held after {self.wait_s}s") from busy
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
