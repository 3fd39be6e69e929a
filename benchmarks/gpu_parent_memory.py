"""Where the trusted parent's device memory goes on one operator, step by step (GPU only).

Round 26 saw the parent of 025 MoE backward hold ~8 GiB live (allocated, not cached) from the contract
probe on, through every phase, beside a worker that needed the device. This script runs the parent's own
steps in one process (the session with its contract probe, one workload's correctness references, a
re-validation's expected outputs as memory.kept_aside keeps them) with torch's allocator history on, and
after each step prints what is allocated and the largest live blocks with the Python lines that made them.

    python3 benchmarks/gpu_parent_memory.py .corpus/problems/025_moe_expert_parallel_execution_backward
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

GIB = 1 << 30


def live_blocks(top: int, min_bytes: int) -> list[tuple[int, str]]:
    """The largest live allocations (bytes, the innermost frames of ours that made them)."""
    found = []
    for segment in torch.cuda.memory._snapshot()["segments"]:
        for block in segment["blocks"]:
            if block["state"] != "active_allocated" or block["size"] < min_bytes:
                continue
            frames = [
                f
                for f in block.get("frames", [])
                if "aka_graph" in f["filename"] or "definition" in f["filename"]
            ]
            where = " <- ".join(f"{Path(f['filename']).name}:{f['line']} {f['name']}" for f in frames[:4])
            found.append((block["size"], where or "(no Python frame of ours)"))
    return sorted(found, reverse=True)[:top]


def pinning_segments(min_segment: int) -> list[str]:
    """Segments of at least `min_segment` bytes that empty_cache cannot give back: a live block inside
    keeps the whole segment reserved (a small allocation split off a large cached block)."""
    lines = []
    for segment in torch.cuda.memory._snapshot()["segments"]:
        live = [b for b in segment["blocks"] if b["state"] == "active_allocated"]
        if segment["total_size"] < min_segment or not live:
            continue
        lines.append(f"   segment {segment['total_size'] / GIB:.2f} GiB held by {len(live)} live block(s):")
        for block in sorted(live, key=lambda b: -b["size"])[:4]:
            frames = [
                f
                for f in block.get("frames", [])
                if f["filename"].endswith(".py") or "definition" in f["filename"]
            ]
            where = " <- ".join(f"{Path(f['filename']).name}:{f['line']} {f['name']}" for f in frames[:6])
            lines.append(f"      {block['size'] / 2**20:9.1f} MiB  {where or '(no Python frame)'}")
    return lines


def report(step: str, top: int) -> None:
    gc.collect()
    torch.cuda.synchronize()
    alloc, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    print(f"== {step}: allocated {alloc / GIB:.2f} GiB, reserved {reserved / GIB:.2f} GiB")
    for size, where in live_blocks(top, 256 << 20):
        print(f"   {size / GIB:6.2f} GiB  {where}")
    torch.cuda.empty_cache()
    print(f"   after empty_cache: reserved {torch.cuda.memory_reserved() / GIB:.2f} GiB")
    for line in pinning_segments(1 << 30):
        print(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op_dir", type=Path)
    parser.add_argument("--workload", type=int, default=0, help="index among the operator's workloads")
    parser.add_argument("--top", type=int, default=6)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_parent_memory: no CUDA device here; run it on the GPU host", file=sys.stderr)
        return 2
    from aka_graph.tools.evaluator.harness.memory import kept_aside
    from aka_graph.tools.evaluator.harness.session import Session, Settings

    torch.cuda.memory._record_memory_history(max_entries=200_000)
    session = Session(Settings(op_dir=args.op_dir, device="cuda"))
    report("session made (contract probed, seeds drawn)", args.top)
    idx = session.indices[args.workload]
    outs, _ = session.reference_outputs(idx)
    report(f"workload {idx}: its correctness references held", args.top)
    del outs
    report("those references let go", args.top)
    inputs = session.reference.inputs(idx, 12345, 1.0)
    want, _ = session.reference.outputs(idx, inputs)
    del inputs
    kept = kept_aside(want, session.device)
    report("a re-validation's expected outputs kept aside", args.top)
    del kept
    report("all let go", args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
