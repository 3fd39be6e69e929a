"""`python -m harness profile`: run one workload of a candidate a few times for a profiler.

Not a verdict: no second process, no reference, no timing. The candidate is loaded (and a C++ one built)
exactly as an evaluation does, its inputs generated as the evaluator generates them, `--warmup` calls run
(JIT compilation, autotuning) and then `--reps` calls between cudaProfilerStart/Stop, so a profiler
started with `--profile-from-start off` (ncu) sees only those. Writes `--out` JSON: the workload id, the
calls made, the device. Standard library + torch only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def profile_workload(
    op_dir: Path, kernel_dir: Path, shape_id: str | None, reps: int, warmup: int, device_name: str
) -> dict[str, Any]:
    import torch

    from .candidate import import_candidate, read_spec
    from .inputs import InputFactory, output_shapes
    from .loading import load_operator
    from .modules import load_input_module, load_reference
    from .runner import KernelRunner

    op = load_operator(op_dir)
    chosen = op.select([shape_id] if shape_id else None)
    wl = chosen[0]
    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device_name)
    factory = InputFactory(op, device, load_reference(op), load_input_module(op))
    target, dps = import_candidate(
        read_spec(kernel_dir, op.kind == "native"), device_type=device.type, build_timeout=None
    )
    if op.kind == "native":
        model = target(**wl.init_kwargs)
        model = model.to(device).eval() if hasattr(model, "to") else model
        runner = KernelRunner(model, False, [], device)
    else:
        runner = KernelRunner(target, dps, output_shapes(op, wl), device)
    inputs = factory.make(wl, int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF, 1.0)
    outputs = runner.alloc_outputs() if runner.dps else None
    cuda = device.type == "cuda"
    for _ in range(max(0, warmup)):
        runner.invoke(inputs, outputs)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    for _ in range(max(1, reps)):
        runner.invoke(inputs, outputs)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return {"workload": wl.id, "reps": max(1, reps), "warmup": max(0, warmup), "device": device.type}


def main(args: Any) -> int:
    """Entry of the `profile` subcommand (cli.py): 0 when the calls ran, 1 when the candidate failed."""
    from .languages.errors import CompileError

    try:
        info = profile_workload(
            args.op_dir, args.kernel_dir, args.shape_id, args.reps, args.warmup, args.device
        )
    except CompileError as exc:
        info = {"error": {"status": exc.status, "message": str(exc)[-4000:]}}
    except Exception as exc:  # the candidate crashed: the profile has nothing to show
        info = {"error": {"status": "RUNTIME_ERROR", "message": f"{type(exc).__name__}: {exc}"[-4000:]}}
    text = json.dumps(info, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 1 if "error" in info else 0
