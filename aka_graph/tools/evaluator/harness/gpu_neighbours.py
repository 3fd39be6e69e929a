"""Other processes on the evaluation's GPU, for a timing dispute that outlived its retries.

On a GPU the parent checks the worker's reported latency against its own wall-clock burst of calls
(plausibility.py). Kernels of other processes on the same GPU time-slice with the burst and slow it,
while the worker's per-replay device timing mostly falls inside one slice: on one H200 with 8 evaluations
at once (round 16) 16 of 113 honest references were called REWARD_HACK that way, each disputed twice.
A campaign's GPU lock never puts two evaluations on one GPU, but a user's GPU may be shared. The parent
therefore asks the driver (nvidia-smi) which processes hold a context on this GPU; when any is neither
the parent nor one of its workers, the clocks cannot be compared and the verdict is INFRA_ERROR, naming
them, instead of REWARD_HACK. A candidate cannot supply such a process: whatever it starts is in the
worker's tree (the subreaper finds double-forked ones), which counts as its own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

QUERY = ["--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader,nounits"]


def compute_apps(text: str) -> list[tuple[int, str]]:
    """(pid, GPU uuid) per line of nvidia-smi's `--query-compute-apps=pid,gpu_uuid` CSV."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            rows.append((int(parts[0]), parts[1]))
    return rows


def _uuid_key(uuid: str) -> str:
    """A GPU uuid as hex digits only: nvidia-smi writes `GPU-5a1c...`, torch may write it without."""
    return re.sub(r"[^0-9a-f]", "", uuid.lower().removeprefix("gpu-"))


DEVICE_FILE = re.compile(r"/dev/nvidia\d+")  # every process with a CUDA context holds one open


def holding_a_gpu(pids: set[int], device_file: re.Pattern[str] = DEVICE_FILE) -> int:
    """How many of `pids` have a GPU's device file open."""
    held = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if device_file.fullmatch(target):
                held += 1
                break
    return held


def on_this_gpu(apps: list[tuple[int, str]], device_uuid: str | None) -> set[int]:
    """The pids the driver lists on this GPU (`device_uuid`; on every GPU when unknown)."""
    key = _uuid_key(device_uuid) if device_uuid else None
    return {pid for pid, uuid in apps if key is None or _uuid_key(uuid) == key}


def strangers(apps: list[tuple[int, str]], own: set[int], device_uuid: str | None, contexts: int) -> int:
    """How many processes on this GPU (`device_uuid`; every GPU when unknown) are not ours. When no pid
    of ours is listed (the driver reports the pids of another namespace: a sandbox's), by count: all but
    the `contexts` our processes hold."""
    here = on_this_gpu(apps, device_uuid)
    if here & own:
        return len(here - own)
    return max(0, len(here) - contexts)


def others_on_gpu(own: set[int], device_uuid: str | None, timeout_s: float = 20.0) -> int | None:
    """The number of processes on this GPU that are not `own`, or None where nvidia-smi cannot say."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        env = {**os.environ, "LC_ALL": "C"}
        out = subprocess.run([smi, *QUERY], capture_output=True, text=True, timeout=timeout_s, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    apps = compute_apps(out.stdout)
    # our contexts are counted only where the driver's pids are another namespace's (a sandbox's)
    contexts = 0 if on_this_gpu(apps, device_uuid) & own else holding_a_gpu(own)
    return strangers(apps, own, device_uuid, contexts)


def device_uuid(device: object) -> str | None:
    """The uuid torch reports for a CUDA device, or None."""
    try:
        import torch

        return str(torch.cuda.get_device_properties(device).uuid)
    except Exception:  # any failure means "unknown": every GPU's processes are counted
        return None


def our_processes() -> set[int]:
    """The parent, every worker it started (and what runs below them), every process below the parent."""
    from .proctree import descendants
    from .worker_proc import OWN_PIDS

    me = os.getpid()
    return {me, *OWN_PIDS, *(p.pid for p in descendants(me))}


def sharing(device: object) -> int:
    """How many other processes hold this GPU (0 where nvidia-smi cannot say)."""
    return others_on_gpu(our_processes(), device_uuid(device)) or 0


def shared_gpu_verdict(found: tuple[str, str], device: object) -> tuple[str, str]:
    """`found` (a clock dispute that outlived its retries) as INFRA_ERROR when other processes used the
    GPU, else unchanged."""
    others = sharing(device)
    if not others:
        return found
    return (
        "INFRA_ERROR",
        f"{found[1]} — but {others} other process(es) held this GPU during the evaluation, whose kernels "
        "slow the harness's own timing: the clocks cannot be compared; evaluate with the GPU to itself",
    )
