"""On a CUDA GPU, the parent's large expected outputs wait in host memory while the worker times
(memory.kept_aside) and are judged against the worker's outputs on the device a piece at a time; an
operator shaped like 025 MoE backward (banks in, gradients of their size out, as many temporaries alive)
passes with an honest kernel. 025 itself ran out of memory in re-validation, first the worker beside the
parent's 24 GiB of expected gradients, then the parent bringing them back 8 GiB at a time (rounds 25-26).

Run: python3 -m pytest -m gpu tests/gpu/test_host_kept_gpu.py -v -s"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.memory import HOST_KEPT_BYTES, host_copy, kept_aside, release_pinned
from aka_graph.tools.evaluator.harness.numerics import CHUNK_ELEMENTS, check_output, same_bits
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate

pytestmark = pytest.mark.gpu

# an honest kernel of the fixture, in destination-passing style (SOL's default for a candidate)
EXPERT_GRADS_KERNEL = """import torch

def run(up, gate, down, grad_up, grad_gate, grad_down):
    a = up * 2.0
    b = gate * 0.5
    torch.add(a, b, out=grad_up)
    torch.sub(b, a, out=grad_gate)
    torch.mul(down - 1.0, 0.25, out=grad_down)
"""


def test_large_values_leave_the_device_and_are_judged_there_a_piece_at_a_time() -> None:
    device = torch.device("cuda")
    values = [torch.randn(HOST_KEPT_BYTES // 4 + 1024, device=device), 3]
    got = values[0].clone()
    before = torch.cuda.memory_allocated(device)
    kept = kept_aside(values, device)
    assert values == [] and kept[0].device.type == "cpu" and kept[1] == 3
    assert kept[0].is_pinned()  # page-locked: brought back at the link's rate, piece by piece
    assert torch.cuda.memory_allocated(device) <= before - HOST_KEPT_BYTES
    tol = Tolerance(atol=1e-5, rtol=1e-5, matched_ratio=1.0)  # every element
    assert same_bits(got, kept[0]) and check_output("out", got, kept[0], tol).ok
    peak = torch.cuda.max_memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    got[CHUNK_ELEMENTS + 7] += 1.0  # one element wrong, in the second piece
    assert not same_bits(got, kept[0])
    verdict = check_output("out", got, kept[0], tol)
    assert not verdict.ok and verdict.max_abs == pytest.approx(1.0, rel=1e-3)
    # never the whole expected output on the device at once: a piece's float32 temporaries only
    assert torch.cuda.max_memory_allocated(device) - got.nbytes < HOST_KEPT_BYTES // 2, peak
    # both in host memory (the worker's outputs copied there where the device is short), compared on it
    on_host = got.cpu()
    del got
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    verdict = check_output("out", on_host, kept[0], tol, on=device)
    assert not verdict.ok and verdict.max_abs == pytest.approx(1.0, rel=1e-3)
    assert same_bits(kept[0], kept[0].clone(), on=device)
    assert torch.cuda.max_memory_allocated(device) < HOST_KEPT_BYTES // 2


def test_an_operator_shaped_like_an_moe_backward_passes_with_an_honest_kernel(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    code, res = evaluate(
        tmp_path, FIXTURES / "r26_expert_grads_large", EXPERT_GRADS_KERNEL, device="cuda", timeout_s=600
    )
    took = time.perf_counter() - t0
    print(f"r26_expert_grads_large: {res['status']} in {took:.1f} s; {res['message'][:400]}")
    print("spans:", sorted(res.get("spans_s") or {}))
    assert code == 0 and res["status"] == "PASS", res["message"]
    assert "timing.expected_to_host" in (res.get("spans_s") or {})  # the expected gradients went aside


def test_a_large_copy_to_the_host_is_page_locked_and_its_pages_are_reused_until_released() -> None:
    """025 MoE backward copied 24 GiB to pageable host memory twice per workload at ~1.3 GB/s (round 27).
    The second copy of one size reuses the first one's locked pages; `release_pinned` gives them back."""
    t = torch.randn(HOST_KEPT_BYTES // 4, device="cuda")
    timings = []
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = host_copy(t)
        timings.append(time.perf_counter() - t0)
        assert out.is_pinned() and torch.equal(out[:1000], t[:1000].cpu())
        del out
    pageable = time.perf_counter()
    plain = t.cpu()
    pageable = time.perf_counter() - pageable
    del plain
    release_pinned()
    print(f"host copies of {t.nbytes / 2**30:.1f} GiB: page-locked {timings} s, pageable {pageable:.2f} s")
    assert min(timings[1:]) < pageable  # reused pages at the link's rate beat a pageable copy
    assert not host_copy(torch.randn(1024, device="cuda")).is_pinned()  # small: as Tensor.cpu copies it


PINNING = """
import sys, torch
from aka_graph.tools.evaluator.harness.memory import place_library_workspaces
device = torch.device("cuda")
if sys.argv[1] == "placed":
    place_library_workspaces(device)
big = torch.empty(2 << 30, dtype=torch.uint8, device=device)
del big  # back to the cache: a 2 GiB block a small allocation may be split off
x = torch.ones(64, 64, device=device, dtype=torch.bfloat16)
y = torch.nn.functional.linear(x, x, x[0]) @ x.float().T.to(torch.bfloat16)
del x, y
torch.cuda.empty_cache()
print(torch.cuda.memory_reserved(device))
"""


@pytest.mark.parametrize(("placed", "pinned"), [("first", False), ("late", True)])
def test_library_workspaces_placed_first_never_pin_a_large_cached_block(placed: str, pinned: bool) -> None:
    """The parent of 025 MoE backward kept 8 GiB reserved for its whole run: the cuBLAS workspace (32 MiB,
    kept for the process's life) was split off a cached 8 GiB block by the contract probe's first matmul.
    Placed first (memory.place_library_workspaces), the workspaces sit in segments of their own."""
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    arg = "placed" if placed == "first" else "late"
    proc = subprocess.run(
        [sys.executable, "-c", PINNING, arg], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    reserved = int(proc.stdout.split()[-1])
    print(f"workspaces placed {placed}: {reserved / 2**20:.0f} MiB reserved after empty_cache")
    assert (reserved >= 1 << 30) == pinned
