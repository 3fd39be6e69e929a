"""How much memory the harness's own copies may take: what is free on the device (or the host), less a
safety margin. Rotated input/output copies only defeat the L2 cache; they must never be what runs an
evaluation out of memory, so they are sized against this and degrade to fewer copies (down to one)."""

from __future__ import annotations

import torch

GIB = 1 << 30
MARGIN_FRACTION = (
    0.10  # of the device's (host's) total memory, kept free for the kernel and the other process
)
MARGIN_MIN = 2 * GIB


def _meminfo() -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    found[key] = int(parts[0]) * 1024
    except OSError:
        pass
    return found


def free_and_total(device: torch.device) -> tuple[int, int]:
    """(free, total) bytes: the GPU's (free includes what torch's caching allocator holds unused), or
    the host's MemAvailable / MemTotal."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return free + max(cached, 0), total
    info = _meminfo()
    total = info.get("MemTotal", 0)
    return info.get("MemAvailable", total), total


def spare_bytes(device: torch.device) -> int:
    """Free memory less the safety margin (never negative)."""
    free, total = free_and_total(device)
    margin = max(MARGIN_MIN, int(MARGIN_FRACTION * total))
    return max(0, free - margin)


def affordable_copies(bytes_per_copy: int, wanted: int, spare: int) -> int:
    """At most `wanted` extra copies of `bytes_per_copy` within `spare` bytes (at least one copy in all:
    the one that already exists)."""
    if bytes_per_copy <= 0:
        return max(1, wanted)
    return max(1, min(wanted, 1 + spare // bytes_per_copy))
