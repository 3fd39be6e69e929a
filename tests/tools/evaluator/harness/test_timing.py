"""Timing statistics, graph sizing, the captured-kernel check, and the speed-of-light table and bound
(pure logic: the CUDA paths themselves run on the GPU benchmark)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from aka_graph.tools.evaluator.harness.gpu_specs import GPU_SPECS, TB, GpuSpec, UnknownGpuError, lookup
from aka_graph.tools.evaluator.harness.speed_of_light import (
    FlopCounter,
    below_bound,
    bound,
    call_bytes,
    dtype_class,
    shares_memory,
    utilization,
)
from aka_graph.tools.evaluator.harness.timing import (
    COLD_BURST_COPIES,
    MAX_CALLS,
    SINGLE_CALL_US,
    capture_plan,
    copies_for,
    judge_capture,
    needs_flush,
    replicate,
    rotation_copies,
    summarize,
    time_host,
)


def test_summary_is_the_median_with_iqr_spread() -> None:
    med, spread = summarize([10.0, 10.0, 11.0, 9.0, 10.0, 30.0])
    assert med == 10.0
    # sorted 9,10,10,10,11,30: inclusive quartiles 10 and 10.75 -> IQR/median = 7.5 % (the outlier
    # 30 would give a range-based spread of 210 %)
    assert spread == pytest.approx(7.5)
    assert summarize([9.0, 10.0, 12.0]) == (10.0, pytest.approx(30.0))  # < 4 samples: range / median
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


@pytest.mark.parametrize("est", [2000.0, 5000.0, 30_000.0, 170_000.0])
def test_a_call_of_milliseconds_is_a_replay_of_its_own_and_a_workload_times_a_handful_of_them(
    est: float,
) -> None:
    """Round 22 (H200): five calls a replay made 30 calls a workload of a 0.1 s call (055 audio encoder:
    49 s of the worker's replays, as long again for its reference). From 2 ms a call is its own replay,
    and a workload's timed replays hold ~30 ms of it, or five calls where those are longer."""
    n = rotation_copies(500 << 20, 60 << 20, est)
    calls, replays = capture_plan(est, n)
    assert n == 1 and calls == 1
    assert replays * calls * est <= max(36_000.0, 5 * est)
    assert capture_plan(1999.0, 1)[0] == 5  # just under: five calls, as before


def test_enough_rotated_copies_to_outrun_the_l2() -> None:
    l2 = 60 << 20
    assert copies_for(8 << 10, l2, 100) == 100  # 8 KB per call: capped at the calls per graph
    assert copies_for(10 << 20, l2, 100) == 18  # 3 x 60 MB / 10 MB
    assert copies_for(500 << 20, l2, 100) == 1
    assert copies_for(3 << 30, l2, 100) == 1  # memory budget


@pytest.mark.parametrize("est_us", [2.0, 10.0, 64.0, 300.0, 5000.0])
@pytest.mark.parametrize(
    "nbytes", [24_576 * 4, 2 * 7 * 4096 * 2 + 8192, 2 * 79 * 4096 * 2 + 8192, 10 << 20, 60 << 20, 500 << 20]
)
def test_no_call_is_timed_from_the_l2(nbytes: int, est_us: float) -> None:
    """F12: a batch-7 rmsnorm call (122 KB) must not be timed from L2 (100 copies rotated without a
    flush were 12 MB, L2-resident). Either one pass over the copies outruns 3x the L2 by itself, or the
    L2 is flushed before each replay and no copy is used twice within one."""
    l2 = 60 << 20
    n = rotation_copies(nbytes, l2, est_us)
    calls, _ = capture_plan(est_us, n)
    if needs_flush(n, nbytes, l2):
        assert calls == n, (n, calls)
    else:
        assert n * nbytes >= 3 * l2, (n, nbytes)


def test_small_calls_get_hundreds_of_copies_not_thousands() -> None:
    """Thousands of copies (1,547 for a 122 KB call against a 60 MB L2) cost seconds of capture and of
    fresh inputs per evaluation; with the flush, a copy per call of a replay is enough."""
    l2 = 60 << 20
    small = 2 * 7 * 4096 * 2 + 8192  # rmsnorm, batch 7: 122 KB
    assert rotation_copies(small, l2, est_us=3.0) == COLD_BURST_COPIES
    assert needs_flush(COLD_BURST_COPIES, small, l2)
    assert rotation_copies(10 << 20, l2, est_us=5.0) == 18 and not needs_flush(18, 10 << 20, l2)
    assert rotation_copies(500 << 20, l2, est_us=100.0) == 1 and not needs_flush(1, 500 << 20, l2)
    assert not needs_flush(MAX_CALLS, 8 << 10, 0)  # a host (no L2 known): nothing to flush


@pytest.mark.parametrize("nbytes", [(1 << 20) * k // 4 for k in range(3, 41)])  # 0.75 ... 10 MiB
def test_the_parents_burst_reads_from_memory_wherever_the_l2_could_flatter_a_fake(nbytes: int) -> None:
    """The parent's burst replays back to back without a flush (plausibility.py): from ~0.7 MiB per call
    the copies alone must outrun 3x the L2, so the burst of a fast call is as cold as its timed replays
    (an L2-warm burst read 1.3 us where the call takes 2.05 us on the H200: a fake report of ~60 % of
    the truth would pass the parent's clock)."""
    l2 = 60 << 20
    for est_us in (2.0, 5.0, 10.0, 19.0):
        n = rotation_copies(nbytes, l2, est_us)
        assert not needs_flush(n, nbytes, l2), (nbytes, est_us, n)


def test_rotation_is_bounded_by_replay_time_for_slow_kernels_on_little_data() -> None:
    n = rotation_copies(100 << 10, 60 << 20, est_us=1000.0)  # a 1 ms kernel on 100 KB
    calls, replays = capture_plan(1000.0, n)
    assert n == 5 and calls == 5 and replays == 6


@pytest.mark.parametrize("n_copies", [1, 3, 18, 100, 1475, 4096])
@pytest.mark.parametrize("est", [1.0, 2.6, 64.0, 300.0, 5000.0])
def test_every_copy_is_used_equally_and_the_last_copy_is_one_the_graph_writes(
    n_copies: int, est: float
) -> None:
    calls, replays = capture_plan(est, n_copies)
    assert calls >= n_copies and calls % n_copies == 0 and (calls >= 5 or est >= SINGLE_CALL_US)
    assert (calls - 1) % n_copies == n_copies - 1  # Bench.last: the re-validated copy is written
    assert 5 <= replays <= 20
    if n_copies * est <= 20_000:
        assert calls * est <= max(40_000, 2 * n_copies * est)  # replay time stays ~tens of ms


def test_replicated_copies_are_aligned_independent_views_with_equal_values() -> None:
    x = torch.randn(7, 33).to(torch.bfloat16)  # 462 bytes: an unaligned size
    w = torch.randn(33)
    flags = torch.tensor([True, False, True])
    scalar_t = torch.tensor(2.5)
    copies = replicate([x, w, 1e-5, flags, scalar_t, x.t()], 5)
    assert len(copies) == 5 and copies[0][0] is x
    for c in copies[1:]:
        assert torch.equal(c[0], x) and torch.equal(c[1], w) and c[2] == 1e-5
        assert torch.equal(c[3], flags) and torch.equal(c[4], scalar_t) and torch.equal(c[5], x.t())
        assert c[0].dtype == x.dtype and c[0].shape == x.shape and c[0].is_contiguous()
        for t in c[:2]:  # as aligned as a fresh allocation (the CUDA allocator's 512 bytes)
            assert (t.data_ptr() - t.untyped_storage().data_ptr()) % 512 == 0
    ptrs = {c[0].data_ptr() for c in copies}
    assert len(ptrs) == 5
    copies[2][0].fill_(0)  # copies are independent buffers
    assert torch.equal(copies[3][0], x) and not torch.equal(copies[2][0], x)
    assert replicate([x], 1) == [[x]]


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
    """The formula on a made-up part with round numbers (not the table's values copied back)."""
    spec = GpuSpec("Test", "sm_0", "nvidia", (), 1.0 * TB, {"bf16": 100.0, "fp8": 400.0}, 1 << 20)
    spec = replace(spec, measured_bw=0.5 * TB, measured_tflops={"bf16": 50.0})
    flops = 10**12  # 1 TFLOP over 1 MB: compute-bound
    sol = bound(spec, 10**6, flops, "bf16")
    assert sol.bound_us == pytest.approx(20_000.0)  # 1e12 / 50e12 s at the measured bf16 rate
    assert sol.reference_flops_us == pytest.approx(2_500.0)  # at the fastest datasheet math (fp8 400)
    assert sol.hard_bound_us == pytest.approx(1.0)  # the bytes alone: FLOPs are no lower bound (below)
    memory = bound(spec, 10**9, 10**6, "bf16")  # 1 GB, 1 MFLOP: memory-bound
    assert memory.bound_us == pytest.approx(2_000.0) and memory.hard_bound_us == pytest.approx(1_000.0)


def test_h200_row_holds_nvidias_datasheet_peaks() -> None:
    """Against the H200 product brief (dense): 4.8 TB/s HBM3e, 989 TFLOP/s BF16, 1979 TFLOP/s FP8,
    sm_90 — an independent source, so a typo in the table fails here."""
    h200 = GPU_SPECS["H200"]
    assert (h200.arch, h200.datasheet_bw) == ("sm_90", 4.8e12)
    assert h200.datasheet_tflops["bf16"] == 989 and h200.datasheet_tflops["fp8"] == 1979


def test_flops_are_counted_on_the_reference_and_dtype_class_follows_inputs() -> None:
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    with FlopCounter() as c:
        torch.relu(a @ b)
    assert c.total == 2 * 16 * 32 * 8
    assert dtype_class([a.bfloat16()]) == "bf16" and dtype_class([a]) == "fp32"
    assert dtype_class([a.to(torch.float8_e4m3fn), a.bfloat16()]) == "fp8"


def test_the_hard_bound_counts_only_bytes_that_must_be_written() -> None:
    """An MoE layer reads only its routed experts: 12.9 GB of expert banks with 0.4 GB routed ran in
    247 us on the H200 with its own reference, below an in+out bound of 2.7 ms. The hard bound is the
    output bytes alone; utilization still counts every byte (and the executed FLOPs)."""
    spec = GpuSpec("Test", "sm_0", "nvidia", (), 1.0 * TB, {"bf16": 100.0}, 1 << 20)
    inputs, outputs = 12_885_032_960, 4_194_304
    sol = bound(spec, inputs + outputs, 0, "bf16", outputs)
    assert sol.hard_bound_us == pytest.approx(outputs / TB * 1e6)
    assert sol.bound_us == pytest.approx((inputs + outputs) / TB * 1e6)  # no measured ceiling: datasheet
    assert not below_bound(247.0, sol.hard_bound_us)
    assert below_bound(sol.hard_bound_us * 0.5, sol.hard_bound_us)
    flop_bound = bound(spec, inputs + outputs, 10**15, "bf16", outputs)
    assert flop_bound.hard_bound_us == pytest.approx(outputs / TB * 1e6)
    assert flop_bound.reference_flops_us == pytest.approx(10**15 / (100.0 * 1e12) * 1e6)


def _kv_cache_update(key_cache: torch.Tensor, keys: torch.Tensor, pos: torch.Tensor) -> list[torch.Tensor]:
    """A reference in the shape of SOL-ExecBench's fused RoPE + KV-cache update: it writes the new
    positions into the cache in place and returns the rotated keys and the cache itself."""
    rotated = keys * 2.0
    key_cache[:, pos] = rotated
    return [rotated, key_cache]


def test_a_kv_cache_updated_in_place_does_not_count_toward_the_bytes_that_must_be_written() -> None:
    """Round 18 on the H200: a 1 GiB cache given one new token (SOL-ExecBench's fused RoPE with a KV-cache
    update) bounded the call at 224 us, and the reference's own 63 us was REWARD_HACK. Only the outputs
    that are not inputs must be written; the cache's new slots are too few to bound anything."""
    cache, keys, pos = torch.zeros(4, 4096, 8), torch.randn(4, 1, 8), torch.tensor([7])
    inputs = [cache, keys, pos]
    outputs = _kv_cache_update(cache, keys, pos)
    moved, written = call_bytes(inputs, outputs, updated=[0])
    assert written == keys.numel() * 4  # the rotated keys only
    assert moved == keys.numel() * 4 + pos.numel() * 8 + written  # the cache neither read nor written
    h200 = GPU_SPECS["H200"]
    assert bound(h200, moved, 0, "fp32", written).hard_bound_us == pytest.approx(
        written / h200.datasheet_bw * 1e6
    )


def test_outputs_that_are_new_tensors_still_bound_the_call_whole() -> None:
    """A functional update (the cache cloned, then written) returns a new buffer every correct kernel must
    fill, as does an output that merely has an input's shape; a view of an input is that input."""
    cache, keys = torch.zeros(4, 4096, 8), torch.randn(4, 1, 8)
    fresh = cache.clone()
    assert call_bytes([cache, keys], [fresh], updated=[]) == (2 * cache.nbytes + keys.nbytes, cache.nbytes)
    view = cache[1:3]
    assert call_bytes([cache, keys], [view, keys * 1], updated=[0]) == (2 * keys.nbytes, keys.nbytes)
    assert shares_memory(view, cache) and not shares_memory(fresh, cache)
    assert not shares_memory(torch.empty(0), cache)  # an empty output writes nothing, aliased or not


def test_a_kernel_skipping_work_its_reference_does_needlessly_is_not_below_the_hard_bound() -> None:
    """Round 12 on the H200: a reference that keeps the diagonal of a full M x M product (M=8192, K=2048)
    executes 275 GFLOP, a 138.9 us FLOP bound; the row dot products it needs took 68.2 us. An embedding
    written as a one-hot matmul (550 GFLOP, 277.8 us); index_select took 4.5 us. Both were REWARD_HACK."""
    h200 = GPU_SPECS["H200"]
    diagonal = bound(h200, 2 * 8192 * 2048 * 2 + 8192 * 4, 2 * 8192 * 8192 * 2048, "bf16", 8192 * 4)
    assert diagonal.reference_flops_us == pytest.approx(138.9, rel=0.01)
    assert not below_bound(68.2, diagonal.hard_bound_us)
    lookup_ = bound(h200, 65536 * 1024 * 2 + 4096 * 8 + 4096 * 1024 * 2, 2 * 4096 * 65536 * 1024, "bf16",
                    4096 * 1024 * 2)  # fmt: skip
    assert lookup_.reference_flops_us == pytest.approx(277.8, rel=0.01)
    assert not below_bound(4.5, lookup_.hard_bound_us)
    assert below_bound(lookup_.hard_bound_us * 0.5, lookup_.hard_bound_us)  # its outputs still bound it


def test_counting_flops_never_imports_torch_dynamo_which_costs_seconds_of_every_cold_start() -> None:
    """TorchDispatchMode subclasses get a __torch_dispatch__ wrapped in torch._disable_dynamo, whose first
    call imports torch._dynamo (4 s of an H200 host's start-up); the parent's counter must not pay it."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from aka_graph.tools.evaluator.harness.speed_of_light import FlopCounter, warm_up\n"
        "warm_up()\n"
        "with FlopCounter() as c:\n"
        "    torch.ones(8, 16) @ torch.ones(16, 4)\n"
        "print(c.total, 'torch._dynamo' in sys.modules)\n"
    )
    argv = [sys.executable, "-c", code]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["1024", "False"]


def test_the_collector_is_off_during_a_capture_and_restored_after() -> None:
    import gc

    from aka_graph.tools.evaluator.harness.timing import _no_collection

    assert gc.isenabled()
    with _no_collection():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _no_collection():
            pass
        assert not gc.isenabled()  # a process that had it off keeps it off
    finally:
        gc.enable()


# -- long calls on a GPU (round 11: a reference walking 8000 sequences in Python ran for minutes) -------


@pytest.mark.parametrize(
    ("est_us", "warmups"),
    [(5.0, 8), (20_000.0, 8), (50_000.0, 4), (150_000.0, 1), (3_000_000.0, 1)],
)
def test_warm_up_calls_before_a_capture_fit_a_budget(est_us: float, warmups: int) -> None:
    from aka_graph.tools.evaluator.harness.timing import warmup_calls

    assert warmup_calls(est_us) == warmups


@pytest.mark.parametrize(
    ("est_us", "wanted", "samples"),
    [
        (10.0, 30, 30),  # fast calls: one per fresh input set, as before
        (33_000.0, 30, 30),  # issue 9's 10-40 ms uncapturable kernels keep (nearly) every sample
        (40_000.0, 30, 25),
        (100_000.0, 30, 10),  # an MoE reference's Python loop over its experts: ten, in a second
        (3_000_000.0, 30, 3),  # a call of seconds: the fewest that still give a median
        (3_000_000.0, 2, 2),  # never more than there are fresh sets
    ],
)
def test_event_samples_fit_a_budget_but_are_at_least_three(est_us: float, wanted: int, samples: int) -> None:
    from aka_graph.tools.evaluator.harness.timing import event_samples

    assert event_samples(est_us, wanted) == samples


@pytest.mark.parametrize(
    ("samples_us", "stops"),
    [
        ([5000.0 + 0.5 * (i % 3) for i in range(10)], True),  # a 5 ms call's samples: microseconds apart
        ([5000.0 + 0.5 * (i % 3) for i in range(9)], False),  # never before EVENT_STABLE_SAMPLES
        ([10.0, 10.4, 9.6, 11.0, 10.1, 9.8, 10.6, 10.0, 9.5, 10.9], False),  # a short call's ~5 % jitter
        ([100.0] * 7 + [150.0] * 3, False),  # a bimodal call: its upper quartile is off by half
        ([100.0] * 8 + [150.0] * 2, True),  # two outliers of ten leave the interquartile range alone
    ],
)
def test_event_sampling_stops_once_ten_samples_agree_within_one_percent(
    samples_us: list[float], stops: bool
) -> None:
    """timing.time_events ends its samples early only when they are steady: a long uncapturable call's
    30 fresh input sets and kept outputs were most of its workload's timing (round 18)."""
    from aka_graph.tools.evaluator.harness.timing import stable

    assert stable(samples_us) is stops
