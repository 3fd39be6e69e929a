"""On a CUDA GPU, every real-benchmark class fixture of ours (tests/fixtures/sol) PASSes with its own
reference as the candidate, the memory-heavy one included (several workloads of up to ~13 GB of bf16
weights each, more than one H200 holds if the harness's copies and benches were not bounded by free
memory), and custom inputs drawing on torch's RNG survive an uncapturable reference (the failed capture
used to leave the default CUDA generator in capture mode).

Also every format fixture (test_real_benchmark_formats.FORMAT_FIXTURES) with its own reference.

The largest MoE workload alone is also held to a stated bound on the device memory the whole evaluation
uses (issue 9, class 2: the harness's own copies ran the H200 out of memory).

Run: python3 -m pytest -m gpu tests/gpu/test_real_benchmark_classes_gpu.py -v -s"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.inputs import InputFactory, dtype_of, shape_of
from aka_graph.tools.evaluator.harness.loading import load_operator
from aka_graph.tools.evaluator.harness.modules import load_reference
from aka_graph.tools.evaluator.harness.rng import heal_after_failed_capture
from tests.tools.evaluator.harness.test_real_benchmark_classes import (
    FIXTURES,
    evaluate,
    make_blob_root,
    reference_candidate,
)
from tests.tools.evaluator.harness.test_real_benchmark_formats import FORMAT_FIXTURES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "name",
    [
        "int_literal_rope",
        "custom_rng_routing",
        "kv_cache_inplace",
        "expanded_bias",
        "safetensors_blob",
        "scalar_output",
        "fp4_dequant_gemv",
        # round 8: an empty workload beside in-place or random references; discrete outputs
        "r8_kv_cache_empty_step",
        "r8_dropout_empty_batch",
        "r8_argmax_ties",
        "r8_threshold_mask",
    ],
)
def test_each_fixture_passes_on_cuda_with_its_own_reference(tmp_path: Path, name: str) -> None:
    extra = ["--blob-root", str(make_blob_root(tmp_path / "blobs"))] if name == "safetensors_blob" else []
    t0 = time.perf_counter()
    code, res = evaluate(
        tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), *extra, device="cuda"
    )
    print(f"{name}: {res['status']} in {time.perf_counter() - t0:.1f} s; phases {res.get('phases_s')}")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["authoritative"] and all(w["status"] == "PASS" for w in res["workloads"])


@pytest.mark.parametrize("name", FORMAT_FIXTURES)
def test_each_format_fixture_passes_on_cuda_with_its_own_reference(tmp_path: Path, name: str) -> None:
    """The SOL format's conventions (test_real_benchmark_formats) on the device: seeded random draws on
    the CUDA generator, custom generators' CPU tensors moved to the GPU, scalars kept by a captured
    graph, fp8/int/bool dtypes, a Triton reference compiled for real, complex intermediates."""
    t0 = time.perf_counter()
    code, res = evaluate(tmp_path, FIXTURES / name, reference_candidate(FIXTURES / name), device="cuda")
    print(f"{name}: {res['status']} in {time.perf_counter() - t0:.1f} s; phases {res.get('phases_s')}")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert res["authoritative"] and all(w["status"] == "PASS" for w in res["workloads"])


def test_the_memory_heavy_fixture_passes_within_the_gpu(tmp_path: Path) -> None:
    op_dir = FIXTURES / "memory_heavy_experts"
    t0 = time.perf_counter()
    code, res = evaluate(tmp_path, op_dir, reference_candidate(op_dir), device="cuda", timeout_s=900)
    print(f"memory_heavy_experts: {res['status']} in {time.perf_counter() - t0:.1f} s; {res.get('phases_s')}")
    for w in res["workloads"]:
        ref = w["reference_latency_us"]
        print(f"  {w['id']}: {w['status']} {w['latency_us']} us (ref {ref}) {w['message'][:200]}")
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert len(res["workloads"]) == 4 and all(w["latency_us"] for w in res["workloads"])


class PeakDeviceMemory:
    """The most device memory in use (every process's: total - free, polled) while the block runs,
    above what was in use when it started."""

    def __init__(self, period_s: float = 0.02) -> None:
        self.period_s, self.peak, self._stop = period_s, 0, threading.Event()

    def _used(self) -> int:
        free, total = torch.cuda.mem_get_info()
        return total - free

    def _poll(self) -> None:
        while not self._stop.wait(self.period_s):
            self.peak = max(self.peak, self._used() - self.baseline)

    def __enter__(self) -> PeakDeviceMemory:
        self.baseline = self._used()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_the_largest_moe_workload_stays_within_a_stated_multiple_of_its_inputs(tmp_path: Path) -> None:
    """Issue 9, class 2, on its own: experts-128 (one call's inputs: a 12.9 GB bf16 expert bank) with its
    own reference PASSes, and the whole evaluation (trusted parent and worker together, device-wide)
    never holds more than 4.5x one call's inputs + 4 GiB (contexts, workspaces). The memory plan's
    figure is ~3x (memory.py: the worker's timed inputs and its re-validation set, the parent's
    re-validation set). Before the plan this workload ran the H200 (139.8 GiB) out of memory, 36.9 GiB
    of it in the worker alone (every seed kept alive plus a clone)."""
    op_dir = FIXTURES / "memory_heavy_experts"
    op = load_operator(op_dir)
    wl = next(w for w in op.workloads if w.id == "experts-128")
    call_bytes = sum(
        math.prod(shape_of(s, wl.axes)) * torch.empty(0, dtype=dtype_of(s.dtype)).element_size()
        for s in op.inputs
        if s.shape is not None
    )
    torch.cuda.init()
    with PeakDeviceMemory() as peak:
        t0 = time.perf_counter()
        code, res = evaluate(
            tmp_path, op_dir, reference_candidate(op_dir), "--shape-id", "experts-128", device="cuda",
            timeout_s=900,
        )  # fmt: skip
    bound = 4.5 * call_bytes + 4 * 2**30
    print(
        f"experts-128: {res['status']} in {time.perf_counter() - t0:.1f} s; peak device memory in use "
        f"{peak.peak / 2**30:.1f} GiB = {peak.peak / call_bytes:.2f}x one call's inputs "
        f"({call_bytes / 2**30:.1f} GiB); bound {bound / 2**30:.1f} GiB; {res.get('phases_s')}"
    )
    for w in res["workloads"]:
        ref_us = w["reference_latency_us"]
        print(f"  {w['id']}: {w['status']} {w['latency_us']} us (ref {ref_us})", w["message"])
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert [w["id"] for w in res["workloads"]] == ["experts-128"] and res["workloads"][0]["latency_us"]
    assert 0 < peak.peak <= bound


def test_custom_rng_inputs_work_after_a_capture_that_failed(tmp_path: Path) -> None:
    op = load_operator(FIXTURES / "custom_rng_routing")
    device = torch.device("cuda")
    factory = InputFactory(op, device, load_reference(op))
    before = factory.make(op.workloads[1], 5, 1.0)
    x = torch.ones(4, device=device)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    # any capture error will do (B017): a host sync is not capturable, so the capture fails part-way
    with pytest.raises(Exception), torch.cuda.graph(graph):  # noqa: B017
        torch.randn(4, device=device)  # the default generator takes part in the capture
        float(x.sum())
    torch.cuda.synchronize()
    # custom generators draw on a private state (rng.seeded): this raised "Offset increment outside graph
    # capture encountered unexpectedly" when they drew on the default generator left in capture mode
    after = factory.make(op.workloads[1], 5, 1.0)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    heal_after_failed_capture(device)  # what Bench does after a failed capture
    torch.randn(4, device=device)  # the global generator draws again too
