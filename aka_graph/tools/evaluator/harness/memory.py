"""How much memory the harness's own copies may take, and which copies it makes (the memory plan).

An evaluation holds one invocation's working set W (its inputs and outputs) and, beside it, copies of its
own: earlier seeds' inputs (fresh addresses per seed), a clone of the inputs (the bit-exact mutation check),
rotated copies (defeat the L2), a pristine copy (eager timing perturbs inputs from it) and fresh timed
input sets (issue 13). On real problems (MoE expert banks, long-context attention, decoder blocks: one
call's inputs are gigabytes) those copies, not the kernel, ran the H200 out of memory (issue 9, class 2).
So each copy is made only where `plan_memory` says so, from what is free now (`spare_bytes`: the GPU's
free memory, or the host's available RAM, less a reserve). The peak of one process is then, per phase:

- correctness: W (the mixed seed's draw goes into the interior as it is drawn: inputs.py) + every seed's
  outputs (they are sent back together), or, for a large workload, one seed per request with the parent's
  reference computed first (one_seed_at_a_time); earlier seeds' inputs and an input clone only while they
  are small (SMALL_BYTES), else one seed at a time and a fingerprint (fingerprint.py);
- timing: W x copies (copies = 1 once the inputs are >= 3x the L2, never beyond what is free)
  + a pristine copy (eager timing only, if it fits) + one fresh timed input set at a time (or the
  re-validation's fresh inputs); an eager burst's sets and outputs only within BURST_BYTES.

Both processes evaluate the same workload at once, so a large workload's evaluation peaks near 3x its
inputs (the worker's timed inputs and its re-validation set, the parent's re-validation set); before the
parent computes a re-validation reference the worker parks its large benches (worker.park).

Large benches of other workloads are dropped (and regenerated from their seed when used again).
"""

from __future__ import annotations

import contextlib
import gc
import math
from dataclasses import dataclass
from typing import Any

import torch

from . import hostmem
from .layout import value_bytes, writable
from .spans import span
from .timing import EVENT_SAMPLES, HOST_REPS

GIB = 1 << 30
MIB = 1 << 20
SMALL_BYTES = 64 * MIB  # extras always worth making (within spare): the clone and the kept seeds up to this
L2_PASSES = 3  # rotated copies until one pass over them is 3x the L2; inputs this large need none
POOL_BYTES = GIB  # fresh timed input sets generated per round (one held at a time), at most
MARGIN_FRACTION = (
    0.10  # of the device's (host's) total memory, kept free for the kernel and the other process
)
MARGIN_MIN = 2 * GIB


def free_and_total(device: torch.device) -> tuple[int, int]:
    """(free, total) bytes: the GPU's (free includes what torch's caching allocator holds unused), or
    the host's available and total memory, bounded by its memory cgroup (hostmem.py)."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return free + max(cached, 0), total
    host = hostmem.read()
    return host.available, host.total


def spare_bytes(device: torch.device) -> int:
    """Free memory less the safety margin (never negative)."""
    free, total = free_and_total(device)
    margin = max(MARGIN_MIN, int(MARGIN_FRACTION * total))
    return max(0, free - margin)


def affordable_copies(bytes_per_copy: int, wanted: int, spare: int) -> int:
    """At most `wanted` extra copies of `bytes_per_copy` within `spare` bytes (at least one copy in all:
    the one that already exists)."""
    if bytes_per_copy <= 0:
        return max(1, wanted)
    return max(1, min(wanted, 1 + spare // bytes_per_copy))


@dataclass(frozen=True)
class MemoryPlan:
    """Which of its own copies the harness makes for one workload (see the module docstring)."""

    keep_seeds: bool  # earlier seeds' inputs stay alive through the seed loop (no address is reused)
    clone_inputs: bool  # the mutation check compares with a clone (else a chunked fingerprint)
    timed_copies: int  # input/output sets rotated in timing (1: no copy at all)
    pristine: bool  # eager timing keeps a pristine copy to perturb from (else exact in-place flips)
    pool_sets: int  # fresh timed input sets, generated one at a time (0: none)


def plan_memory(
    input_bytes: int,
    output_bytes: int,
    spare: int,
    *,
    seeds: int = 1,
    l2_bytes: int = 0,
    wanted_copies: int = 1,
    eager_copies: int = 1,
    pool_wanted: int = 0,
    pool_bytes: int = POOL_BYTES,
) -> MemoryPlan:
    """The memory plan for one invocation of `input_bytes` + `output_bytes`, with `spare` bytes free
    beyond what is already allocated (`spare_bytes`). Pure: the same numbers give the same plan.

    `wanted_copies`: rotated copies timing would like (timing.rotation_copies); `eager_copies`: how many
    copies eager timing keeps (each needs a pristine twin; when they exist already, `spare` is what is
    free beside them and `wanted_copies` is 1); `pool_wanted`: fresh timed input sets wanted, of which
    `pool_bytes` are drawn per round at most."""
    work = max(1, input_bytes + output_bytes)
    spare = max(0, spare)
    clone = input_bytes <= min(SMALL_BYTES, spare)
    kept = (seeds - 1) * input_bytes
    keep = seeds > 1 and kept <= min(SMALL_BYTES, spare - (input_bytes if clone else 0))
    copies = max(1, wanted_copies)
    if l2_bytes > 0 and input_bytes >= L2_PASSES * l2_bytes:
        copies = 1  # one call's inputs already outrun the L2: rotating copies buys nothing
    copies = affordable_copies(work, copies, spare)
    left = spare - (copies - 1) * work
    twins = max(1, eager_copies) * input_bytes  # a pristine twin of every copy eager timing keeps
    pristine = twins <= left
    left -= twins if pristine else 0
    sets = min(pool_wanted, pool_bytes // max(1, input_bytes)) if input_bytes <= left else 0
    return MemoryPlan(keep, clone, copies, pristine, sets if sets >= 2 else 0)


class HostTooSmall(RuntimeError):
    """A CPU evaluation whose workload this host cannot hold: the environment's shortfall, never the
    candidate's (without this check the worker's input draw ran past its memory limit and the honest
    reference of a 22.5 GB MoE problem was reported as a kernel error)."""


def host_shortfall(set_bytes: int, available: int, worker_limit: int, where: str = "this host") -> str | None:
    """Why one call of `set_bytes` (its declared inputs and outputs) cannot be evaluated in this host's
    memory, or None. On a CPU both processes hold the call's set (the parent's reference, the worker's
    kernel), and the worker may use at most `worker_limit` (isolate.memory_limit_bytes). Pure."""
    need = 2 * set_bytes
    if set_bytes <= worker_limit and need <= available:
        return None
    gib = 1 / GIB
    return (
        f"one call's inputs and outputs take {set_bytes * gib:.1f} GiB, held by both the harness and the "
        f"worker ({need * gib:.1f} GiB in all), and {where} has {available * gib:.1f} GiB available, "
        f"of which the worker may use {worker_limit * gib:.1f} GiB; evaluate it on a GPU (--device cuda) "
        f"or on a host with at least {math.ceil((need + MARGIN_MIN) * gib)} GiB free"
    )


ONE_SEED_BYTES = GIB  # a workload whose seeds' sets together reach this is checked one seed at a time


def one_seed_at_a_time(set_bytes: int, seeds: int) -> bool:
    """Whether correctness runs a workload's seeds one at a time, the parent's reference before the
    worker's call, rather than all seeds at once with both processes computing together. Together, each
    process held every seed's outputs (three 24 GiB sets of MoE weight gradients, round 18) and each
    computed its reference's temporaries beside the other's (a decoder block's 16 GiB attention scores
    while the worker held 104 GiB): the H200 ran out of memory on problems one call of which fits. A
    small workload keeps the overlap, which is where its time goes."""
    return set_bytes * seeds >= ONE_SEED_BYTES


TIMED_SETS = {"cpu": HOST_REPS, "cuda": EVENT_SAMPLES}  # fresh input sets wanted: one per timed call


def fresh_sets(set_bytes: int, spare: int, device_type: str, generation_s: float | None = None) -> int:
    """Fresh timed input sets for one eager timing round (0: none, the perturbation stays). `set_bytes`:
    one set's inputs and the outputs kept from its call (the worker holds every timed call's);
    `generation_s`: what drawing one set takes (the parent's own measure, sent with the request). The
    worker makes this many (worker._fresh_pool); the parent holds it to this where the sets are small
    enough that spare memory cannot be what limited them (spotcheck.py)."""
    wanted = min(TIMED_SETS[device_type], generator_sets(generation_s))
    # a host's few timed calls get fresh sets whatever their size, as far as memory holds them all at once
    # (kept outputs included): over POOL_BYTES they had none, and a kernel skipped every timed call on
    # integer inputs it had seen (the perturbation moves floats only: red team round 25, 614 MB sets)
    cap = max(POOL_BYTES, spare // 2) if device_type == "cpu" else POOL_BYTES
    return plan_memory(set_bytes, 0, spare, pool_wanted=wanted, pool_bytes=cap).pool_sets


GENERATION_BUDGET_S = 2.0  # drawing one round's fresh timed sets takes about this long at most ...
MIN_GENERATED_SETS = HOST_REPS  # ... but never fewer sets than this (a host's timed calls, each its own)


def generator_sets(generation_s: float | None) -> int:
    """Fresh timed sets an operator's input generator can draw within GENERATION_BUDGET_S, at least
    MIN_GENERATED_SETS (None or 0: no limit of this kind). Some public generators fill a tensor one
    element at a time in a Python loop (034 vision-language cross attention: ~25 k GPU scalar writes per
    set); 30 such sets per timing round put the problem past a 200 s limit on the H200 (round 20). Fewer
    sets leave fewer timed samples (one per set, never a set used twice): a long call's median needs few."""
    if not generation_s or generation_s <= 0:
        return 1 << 30
    return max(MIN_GENERATED_SETS, int(GENERATION_BUDGET_S / generation_s))


CORRECTNESS_GENERATION_S = 3.0  # a workload's correctness seeds: as many as its generator draws in this long


def generator_seeds(generation_s: float | None, seeds: int) -> int:
    """Correctness seeds of a workload whose inputs take `generation_s` a draw (None or 0: unknown, every
    one): as many as fit CORRECTNESS_GENERATION_S, at least one. Both processes draw every seed's inputs
    (the worker for its call, the parent for the reference's), and a public generator that fills a
    tensor element by element drew for 224 s of a 273 s evaluation (034 vision-language cross attention,
    ~5 s a draw at batch 64, round 21 on the H200). Each workload's timed calls are still checked on
    fresh inputs (re-validation, the graph's copies, the spot checks), and the result says how many seeds
    a workload was checked on."""
    if not generation_s or generation_s <= 0:
        return seeds
    return max(1, min(seeds, int(CORRECTNESS_GENERATION_S / generation_s)))


BURST_BYTES = 512 * MIB  # a burst's staged input sets and kept outputs together, at most


def burst_sets_fit(set_bytes: int, reps: int, spare: int) -> bool:
    """Whether a burst of `reps` calls may run on fresh input sets it keeps the outputs of (bench.burst):
    every set and every call's outputs are held at once, within BURST_BYTES and half of what is spare.
    A burst is long only for a fast call (plausibility.burst_reps), whose set is small: the calls this
    leaves on the pristine perturbation are the long ones with gigabyte inputs."""
    return reps * set_bytes <= min(BURST_BYTES, spare // 2)


def output_bytes(out_specs: list[tuple[tuple[int, ...], torch.dtype]]) -> int:
    """Bytes of the declared outputs (shape, dtype) of one call."""
    return sum(math.prod(shape) * torch.empty(0, dtype=dtype).element_size() for shape, dtype in out_specs)


_COLLECTOR_KEPT_OFF: list[bool] = []  # set in the worker only (keep_collector_off)


def keep_collector_off() -> None:
    """The worker's cyclic collector off from now on (worker.worker_main, before the Sentinel's snapshot):
    a kernel's garbage and its finalizers are dealt with only at `collect_here`. The trusted parent keeps
    its own collector as it is (it times the reference with the same Bench)."""
    gc.disable()
    _COLLECTOR_KEPT_OFF[:] = [True]


def collect_here(generation: int = 0) -> None:
    """One of the harness's collection points, where it writes nothing the next call reads. In the worker
    the collector is switched off again first: a kernel's own `gc.disable(); ...; gc.enable()` around its
    setup is honest, and is undone here rather than called tampering."""
    if _COLLECTOR_KEPT_OFF:
        gc.disable()
    gc.collect(generation)


CACHED_BYTES = GIB  # unused device memory the parent's allocator may keep after judging (release_cached)


def release_cached(device: torch.device, threshold: int = CACHED_BYTES) -> None:
    """Hand the caching allocator's unused device memory back to the driver when it holds more than
    `threshold`. Judging a large output makes float32 temporaries of several times its size (numerics:
    ~10x a bf16 output); kept cached, they starved the worker: the parent of an attention backward held
    78 GiB after judging 2.7 GB outputs, and the worker's timing then ran out of memory beside it
    (round 17, on the H200)."""
    if device.type != "cuda":
        return
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    if cached > threshold:
        release(device)


def settle(device: torch.device) -> None:
    """The parent's own device work finished (its kernels would otherwise still run while the worker
    starts timing) and large cached memory handed back (release_cached)."""
    if device.type != "cuda":
        return
    with contextlib.suppress(RuntimeError):  # a broken context: the error that broke it is reported
        torch.cuda.synchronize(device)
    release_cached(device)


KEEP_CACHE_FACTOR = 8  # a process keeps its cached memory while the device has this many times as much free


def cache_is_modest(device: torch.device, held: int = 0) -> bool:
    """Whether this process may keep its unused cached device memory (and `held`, what it has just let
    go, which a reference cycle may still hold): the device has KEEP_CACHE_FACTOR times as much free, so
    the other process loses at most a ninth of what it could use. A release costs a full collection, a
    synchronization and the driver's frees (~80 ms); the parent released after every seed's reference
    and every judgement: 191 releases, 15 s of an 83 s evaluation of a 16-workload MLP whose 5 GB sets
    left 110 GB free (round 21 on the H200)."""
    cached = max(torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device), held, 0)
    free, _ = torch.cuda.mem_get_info(device)
    return cached * KEEP_CACHE_FACTOR <= free


def release(
    device: torch.device, threshold: int = SMALL_BYTES, freed: int | None = None, force: bool = False
) -> None:
    """Hand freed device memory back to the driver when it was large and the device is short of it (the
    other process, parent or worker, evaluates the same workload at the same time and sees only what the
    driver has free; the caching allocator would otherwise keep every size it ever held, workload after
    workload). `force`: whatever is free (a timing loop that ran out of memory, a parent handing the
    device to the next candidate)."""
    if device.type != "cuda" or (freed is not None and freed < threshold):
        return
    if not force and cache_is_modest(device, freed or 0):
        return
    gc.collect()
    with contextlib.suppress(RuntimeError):  # a broken context: the error that broke it is reported
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def to_host(values: list[Any], pinned: bool = False) -> list[Any]:
    """Tensors as (host copy of their compact base, shape): an expanded input is not materialized.
    `pinned`: large copies page-locked where the host has room (host_copy; the trusted parent only)."""
    copy = host_copy if pinned else torch.Tensor.cpu
    return [(copy(writable(v)), tuple(v.shape)) if isinstance(v, torch.Tensor) else v for v in values]


PINNED_MIN_BYTES = 256 << 20  # smaller copies are quick either way
PINNED_HEADROOM = 8 * GIB  # host memory left to everything else beside the page-locked copies


def host_copy(t: torch.Tensor) -> torch.Tensor:
    """Device tensor `t` copied into host memory: page-locked where it is large and the host has room,
    else as `Tensor.cpu` copies it. 025 MoE backward's 24 GiB of gradients went to pageable memory at
    ~1.3 GB/s twice per workload (18 + 14 s of its 45 s, round 27): each copy faulted in fresh pages and
    went through the driver's bounce buffer. torch's host allocator keeps page-locked blocks for the next
    copy of that size (the next workload's), so only the first pays for the locking, until
    `release_pinned` at the evaluation's end. It rounds a block up to a power of two: the room asked of
    the host is that."""
    nbytes = t.numel() * t.element_size()
    if t.device.type != "cuda" or not t.is_contiguous() or nbytes < PINNED_MIN_BYTES:
        return t.cpu()
    if hostmem.read().available < (1 << (nbytes - 1).bit_length()) + PINNED_HEADROOM:
        return t.cpu()
    try:
        out = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    except RuntimeError:  # the driver could not lock so much: pageable, as before
        return t.cpu()
    out.copy_(t)  # synchronous: the copy is whole when this returns
    return out


def release_pinned() -> None:
    """The page-locked host blocks torch's allocator keeps (host_copy) given back to the host: at the end
    of an evaluation, so a long-lived parent (serve.py) does not hold them between candidates."""
    empty = getattr(torch._C, "_host_emptyCache", None)  # (CUDA builds of torch)
    if empty is not None:
        empty()


def to_device(parked: list[Any], device: torch.device) -> list[Any]:
    """What `to_host` parked, on `device` again, expanded as it was."""
    out = []
    for v in parked:
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], torch.Tensor):
            base, shape = v
            t = base.to(device)
            out.append(t.expand(shape) if tuple(t.shape) != shape else t)
        else:
            out.append(v)
    return out


LARGE_WORKLOAD_BYTES = GIB  # from here a process-long library allocation may pin a large cached block


def place_library_workspaces(device: torch.device) -> None:
    """The math libraries' workspaces (cuBLAS and cuBLASLt: 32 MiB on Hopper, kept for the life of the
    process) allocated now, in segments of their own, before anything large. Allocated by a reference's
    first matmul after a large workload's tensors had gone back to the cache, the workspace was split off
    an 8 GiB cached block and kept the whole block reserved: 025 MoE backward's parent held those 8 GiB
    through every phase beside a worker that peaked at 140.9 of the H200's 143.7 GiB (round 27,
    benchmarks/gpu_parent_memory.py; the live block was 32 MiB from the contract probe's F.linear)."""
    if device.type != "cuda":
        return
    a = torch.ones(16, 16, device=device)
    _ = a @ a  # cuBLAS
    b = a.to(torch.bfloat16)
    _ = torch.nn.functional.linear(b, b, b[0])  # addmm with a bias: cuBLASLt's path
    torch.cuda.synchronize(device)


HOST_KEPT_BYTES = 2 * GIB  # the parent's expected outputs above this wait in host memory (kept_aside)


def kept_aside(values: list[Any], device: torch.device) -> list[Any]:
    """`values` as the parent keeps them while the worker times: on a GPU, where they are large, in host
    memory (an expanded one by its base, expanded again there), with the device's cache handed back at
    once; else as they are. The judgement brings them over a piece at a time (numerics.compute_device).
    The parent held the reference's 24 GiB of gradients for 025 MoE backward's re-validation on the H200
    while the worker drew its 24 GiB fresh set beside an 88 GiB bench: out of memory (rounds 25-26);
    brought back whole, one 8 GiB output at a time, the parent's own cache fragments ran it out next."""
    if device.type != "cuda" or value_bytes(values) <= HOST_KEPT_BYTES:
        return values
    with span("timing.expected_to_host"):
        kept = to_device(to_host(values, pinned=True), torch.device("cpu"))  # (on the host: no 2nd copy)
        values.clear()  # the caller's list too: nothing of them stays on the device
        release(device, force=True)
    return kept
