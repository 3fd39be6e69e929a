"""Issue 8 on the H200: the demo's retuned `fast.py` (GPU plan: token blocks x codebook slices, then a pick
kernel) is exact against the reference and faster than it on every workload, so the GPU demo can promote
it; `slow.py` stays slower than `fast.py`. Prints a per-shape table (CUDA-graph replays, median of 5).

Run: python3 -m pytest -m gpu tests/gpu/test_demo_kernel_gpu.py -v -s"""

from __future__ import annotations

import importlib.util
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
import torch

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parents[2] / "aka_graph" / "examples" / "vq_nearest_code"
WORKLOADS = (EXAMPLE / "workload.jsonl").read_text().splitlines()
TOKENS = [json.loads(line)["axes"]["num_tokens"] for line in WORKLOADS]


def _kernel(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"demo_gpu_{name}", EXAMPLE / "kernels" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference() -> Callable[..., torch.Tensor]:
    namespace: dict[str, object] = {}
    exec(json.loads((EXAMPLE / "definition.json").read_text())["reference"], namespace)
    return namespace["run"]  # type: ignore[return-value]


def _graph_us(call: Callable[[], object], replays: int = 50) -> float:
    """Median per-call time of `replays` calls captured in one CUDA graph (as the harness times)."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(replays):
            call()
    samples = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / replays)
    return statistics.median(samples)


def test_fast_beats_the_reference_on_every_demo_shape_and_slow_does_not_beat_fast() -> None:
    fast, slow, reference = _kernel("fast"), _kernel("slow"), _reference()
    rows = []
    for tokens in TOKENS:
        gen = torch.Generator(device="cuda").manual_seed(tokens)
        x = torch.randn(tokens, 64, device="cuda", generator=gen)
        codebook = torch.randn(1024, 64, device="cuda", generator=gen)
        out = torch.full((tokens, 64), float("nan"), device="cuda")
        fast.run(x, codebook, out)
        assert torch.equal(out, reference(x, codebook)), f"fast.py wrong at {tokens} tokens"
        ref_us = _graph_us(lambda x=x, codebook=codebook: reference(x, codebook))
        fast_us = _graph_us(lambda x=x, codebook=codebook, out=out: fast.run(x, codebook, out))
        slow_us = _graph_us(lambda x=x, codebook=codebook, out=out: slow.run(x, codebook, out))
        rows.append((tokens, ref_us, fast_us, slow_us))
    print("\ntokens | reference us | fast us | slow us | fast speedup")
    for tokens, ref_us, fast_us, slow_us in rows:
        print(f"{tokens} | {ref_us:.1f} | {fast_us:.1f} | {slow_us:.1f} | {ref_us / fast_us:.2f}x")
    for tokens, ref_us, fast_us, slow_us in rows:
        assert fast_us < 0.9 * ref_us, f"{tokens} tokens: fast {fast_us:.1f} us vs reference {ref_us:.1f} us"
        assert slow_us > fast_us, f"{tokens} tokens: slow.py {slow_us:.1f} us beat fast.py {fast_us:.1f} us"
