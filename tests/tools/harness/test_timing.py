"""Timing statistics, graph sizing, the captured-kernel check, and the speed-of-light table and bound
(pure logic: the CUDA paths themselves run on the GPU benchmark)."""

from __future__ import annotations

import pytest
import torch

from aka_graph.tools.harness.gpu_specs import GPU_SPECS, UnknownGpuError, lookup
from aka_graph.tools.harness.speed_of_light import FlopCounter, below_bound, bound, dtype_class, utilization
from aka_graph.tools.harness.timing import capture_plan, copies_for, judge_capture, summarize, time_host


def test_summary_is_the_median_with_iqr_spread() -> None:
    med, spread = summarize([10.0, 10.0, 11.0, 9.0, 10.0, 30.0])
    assert med == 10.0
    assert 0 < spread < 25  # one outlier does not move a robust spread much
    assert summarize([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError):
        summarize([])


def test_graph_size_targets_a_few_ms_per_replay_and_a_bounded_total() -> None:
    assert capture_plan(2.0) == (100, 20)  # tiny kernels: 100 calls per graph
    calls, replays = capture_plan(1000.0)  # 1 ms kernels: few calls, few replays
    assert calls == 5 and 5 <= replays <= 30
    for est in (1.0, 5.0, 60.0, 300.0, 5000.0):
        calls, replays = capture_plan(est)
        assert calls * replays * est <= 50_000 or (calls == 5 and replays == 5)  # ~30 ms per workload


def test_enough_rotated_copies_to_outrun_the_l2() -> None:
    l2 = 60 << 20
    assert copies_for(8 << 10, l2, 100) == 100  # 8 KB per call: capped at the calls per graph
    assert copies_for(10 << 20, l2, 100) == 18  # 3 x 60 MB / 10 MB
    assert copies_for(500 << 20, l2, 100) == 1
    assert copies_for(3 << 30, l2, 100) == 1  # memory budget


def test_an_empty_or_thinner_capture_is_rejected_not_timed_as_zero() -> None:
    assert "no kernels" in judge_capture(0, 50)
    assert "real work only on the first calls" in judge_capture(10, 50)
    assert judge_capture(50, 50) is None and judge_capture(150, 50) is None
    assert judge_capture(None, 50) is None


def test_host_timing_runs_prepare_untimed_before_every_call() -> None:
    seen: list[str] = []
    timing = time_host(
        lambda k: seen.append(f"call{k}"),
        2,
        first_call_s=0.01,
        budget_s=0.03,
        prepare=lambda i: seen.append(f"prep{i}"),
    )
    assert timing.method == "host_interpreter" and len(timing.samples_us) == 3
    assert seen == ["prep0", "call0", "prep1", "call1", "prep2", "call0"]


def test_gpu_lookup_by_detected_name_and_unknown_gpus_are_errors() -> None:
    assert lookup("NVIDIA H200").name == "H200"
    assert lookup("NVIDIA H100 PCIe").name == "H100-PCIe"
    assert lookup("NVIDIA H100 80GB HBM3").name == "H100-SXM"
    assert lookup("NVIDIA A100-SXM4-80GB").arch == "sm_80"
    assert lookup("AMD Instinct MI300X").vendor == "amd"
    for name in ("L40S", "B200"):
        assert lookup(name).name == name
    with pytest.raises(UnknownGpuError, match="--gpu-spec"):
        lookup("NVIDIA GeForce GT 710")


def test_h200_utilization_matches_the_measured_copy_rate() -> None:
    h200 = GPU_SPECS["H200"]
    moved = 2 * 14418 * 4096 * 2 + 4096 * 2  # Triton RMSNorm 14418x4096 bf16 in + out + weight
    sol = bound(h200, moved, 0, "bf16")
    assert utilization(sol.bound_us, 60.1) == pytest.approx(91, abs=1.5)  # design §7: 3.93 TB/s = 91 %
    assert sol.hard_bound_us < sol.bound_us  # the datasheet (4.8 TB/s) gives the lower, hard bound
    assert below_bound(sol.hard_bound_us * 0.5, sol.hard_bound_us)
    assert not below_bound(60.1, sol.hard_bound_us)


def test_compute_bound_workloads_use_the_flop_peak() -> None:
    h200 = GPU_SPECS["H200"]
    flops = 2 * 8192**3
    sol = bound(h200, 3 * 8192 * 8192 * 2, flops, "bf16")
    assert sol.bound_us == pytest.approx(flops / 790e12 * 1e6)
    assert sol.hard_bound_us == pytest.approx(flops / 1979e12 * 1e6)  # fastest datasheet math (fp8)


def test_flops_are_counted_on_the_reference_and_dtype_class_follows_inputs() -> None:
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    with FlopCounter() as c:
        torch.relu(a @ b)
    assert c.total == 2 * 16 * 32 * 8
    assert dtype_class([a.bfloat16()]) == "bf16" and dtype_class([a]) == "fp32"
    assert dtype_class([a.to(torch.float8_e4m3fn), a.bfloat16()]) == "fp8"
