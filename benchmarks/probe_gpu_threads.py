"""Which OS threads a GPU process gains, and when: the data a thread check on the GPU would need.

On a host the parent counts the worker's OS threads after every reply against those it had before the
kernel loaded (session.KernelState.request): a kernel starts no threads there. On a GPU the CUDA runtime
starts threads of its own, so the check is off. Whether it could be on depends on when those threads
appear: at context creation only (a baseline taken after CUDA init would do), or also lazily on an honest
kernel's first cuBLAS call, Triton launch or torch.compile. This prints the count and names after each.

    python3 benchmarks/probe_gpu_threads.py
"""

from __future__ import annotations

import os
from pathlib import Path

import torch


def threads() -> dict[int, str]:
    out = {}
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            out[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:
            continue
    return out


def step(label: str, before: dict[int, str]) -> dict[int, str]:
    now = threads()
    new = sorted(name for tid, name in now.items() if tid not in before)
    gone = len([tid for tid in before if tid not in now])
    print(f"{label:<28} threads {len(now):3d}  new {new}  gone {gone}", flush=True)
    return now


def main() -> None:
    seen = step("python + torch imported", {})
    torch.cuda.init()
    seen = step("torch.cuda.init()", seen)
    x = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    seen = step("first tensor + sync", seen)
    (x + 1).sum().item()
    seen = step("elementwise + reduction", seen)
    (x @ x).sum().item()
    seen = step("first matmul (cuBLAS)", seen)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
    g.replay()
    torch.cuda.synchronize()
    seen = step("CUDA graph capture/replay", seen)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    y.add_(1)
    e1.record()
    torch.cuda.synchronize()
    seen = step("CUDA events", seen)
    import triton
    import triton.language as tl

    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    flat = x.reshape(-1)
    out = torch.empty_like(flat)
    double[(triton.cdiv(flat.numel(), 1024),)](flat, out, flat.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    seen = step("first Triton kernel (compile)", seen)
    double[(triton.cdiv(flat.numel(), 1024),)](flat, out, flat.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    seen = step("Triton kernel again", seen)
    compiled = torch.compile(lambda a: torch.relu(a) * 3)
    compiled(x).sum().item()
    seen = step("torch.compile first call", seen)
    compiled(x).sum().item()
    seen = step("torch.compile again", seen)
    step("final", seen)


if __name__ == "__main__":
    main()
