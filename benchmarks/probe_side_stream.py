"""What unjoined side-stream work looks like to each of the harness's clocks, on a CUDA device.

`adv_side_stream` (tests/tools/evaluator/harness/candidates) launches its work on a private stream and never
joins it to the caller's. Round 5 and 6 saw it PASS on an idle H200 on the launch-bound rmsnorm shape, cold
and warm. This probe prints, per batch size, for the cheat and for the honest torch kernel:
  - what a CUDA-graph capture of 10 calls does (error, or the replay's time per call),
  - per-call CUDA events on the caller's stream (what the CUDA-event fallback reports),
  - the host's wall clock with a device-wide synchronize (the whole device's work),
  - whether a copy enqueued on the caller's stream right after the call sees poisoned outputs (the race the
    worker's "outputs changed after the call returned" check relies on), with and without a host sync.

Run: python3 benchmarks/probe_side_stream.py   (needs a CUDA device; prints a table)
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from pathlib import Path

import torch

CANDIDATES = Path(__file__).resolve().parents[1] / "tests/tools/evaluator/harness/candidates"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, CANDIDATES / name / "kernel.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run


def graph_us(run, args) -> str:
    g = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            with torch.cuda.graph(g):
                for _ in range(10):
                    run(*args)
        except Exception as exc:
            return f"capture failed: {type(exc).__name__}: {str(exc)[:80]}"
    empty = any("empty" in str(w.message).lower() for w in seen)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g.replay()
    start.record()
    for _ in range(20):
        g.replay()
    end.record()
    end.synchronize()
    return f"{start.elapsed_time(end) * 1000 / 200:.2f}{' (EMPTY graph)' if empty else ''}"


def event_us(run, args, flush: torch.Tensor | None = None, sync_after_flush: bool = False) -> float:
    """Per-call CUDA events on the caller's stream; with `flush`, zeroed before each call as the harness's
    CUDA-event fallback does (its GPU time overlaps the host's launches unless `sync_after_flush`)."""
    times = []
    for _ in range(30):
        torch.cuda.synchronize()
        if flush is not None:
            flush.zero_()
            if sync_after_flush:
                torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return sorted(times)[len(times) // 2]


def wall_us(run, args) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(100):
        run(*args)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / 100


def race(run, args, host_sync: bool) -> int:
    """How many of 50 calls left poison visible to a copy on the caller's stream right after return."""
    out = args[-1]
    seen = 0
    for _ in range(50):
        torch.cuda.synchronize()
        out.fill_(float("nan"))
        run(*args)
        if host_sync:
            torch.cuda.current_stream().synchronize()
        snap = out.clone()
        torch.cuda.synchronize()
        seen += int(torch.isnan(snap).any().item())
    return seen


def main() -> None:
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), torch.__version__)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    shapes = {
        b: (
            torch.randn(b, 4096, device="cuda", dtype=torch.bfloat16),
            torch.randn(4096, device="cuda", dtype=torch.bfloat16),
        )
        for b in (1, 7, 170, 14418)
    }
    print(
        "| kernel | batch | events us | events+flush us | events+flush+sync us | wall+devsync us "
        "| race (no sync) | race (sync) | graph us/call |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for batch, (h, w) in shapes.items():
        out = torch.empty_like(h)
        for name in ("rmsnorm_torch", "adv_side_stream"):
            run = load(name)
            args = (h, w, out)
            for _ in range(3):
                run(*args)
            torch.cuda.synchronize()
            print(
                f"| {name} | {batch} | {event_us(run, args):.2f} | {event_us(run, args, flush):.2f} | "
                f"{event_us(run, args, flush, True):.2f} | {wall_us(run, args):.2f} | "
                f"{race(run, args, False)}/50 | {race(run, args, True)}/50 | ",
                end="",
                flush=True,
            )
            # last: a failed capture can leave the default generator in capture mode
            print(f"{graph_us(run, args)} |" if name == "rmsnorm_torch" or batch == 14418 else "not tried |")


if __name__ == "__main__":
    main()
