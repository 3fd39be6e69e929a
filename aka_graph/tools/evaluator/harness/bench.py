"""One workload's timing setup, shared by the worker (candidate) and the parent (reference): rotated
input/output copies, then CUDA-graph capture (fallback: per-call CUDA events) or host timing on CPU.

Memory: the copies only defeat the L2, so they are sized against what is free (memory.py's plan) and
never beyond it; a pristine copy for eager timing only where it fits (else inputs are perturbed by exact
in-place sign flips); fresh timed input sets are drawn one at a time (FreshSets). Before a new workload's
bench is built, large benches of earlier workloads are *parked* (everything freed; rebuilt when used
again, from their seed where one can regenerate them, else from first inputs kept on the host), and when
it does not fit, small ones too. Expanded (stride-0) inputs keep their layout in every copy, and only
their compact base is ever written.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
import time
import weakref
from collections.abc import Callable
from typing import Any

import torch

from .fingerprint import InputSnapshot
from .guards import between_steps_violations, dispatch_due, modes_violation, planted_violation
from .inputs import FP8, packed, random_poison_
from .layout import clone_like, clone_values, value_bytes, writable
from .memory import (
    SMALL_BYTES,
    collect_here,
    output_bytes,
    plan_memory,
    release,
    spare_bytes,
    to_device,
    to_host,
)
from .rng import heal_after_failed_capture, seed_host_generators
from .runner import KernelRunner
from .spans import span
from .timing import (
    EVENT_SAMPLES,
    GraphTimer,
    Timing,
    capture_plan,
    estimate_us,
    event_samples,
    flush_buffer,
    flush_host_caches,
    judge_capture,
    needs_flush,
    replicate,
    rotation_copies,
    time_events,
    time_host,
    warmup_calls,
)

FALLBACK_COPIES = 32  # the CUDA-event fallback times 30 calls, each after an L2 flush
_LIVE: list[weakref.ref[Bench]] = []  # this process's benches, for parking the least recently used
_CLOCK = itertools.count()


def _kept_copy(o: Any) -> Any:
    """An output as the bench keeps it for the parent: a tensor copied (an expanded one as its base,
    expanded again), a plain number as it is, anything else None."""
    if type(o) is torch.Tensor:
        return clone_like(o.detach())
    return o if type(o) in (int, float, bool) else None


def _replicate(first: list[Any], n: int) -> list[list[Any]]:
    """`first` and n-1 copies (timing.replicate) made of each input's compact base, so an expanded
    (stride-0) input stays expanded, and small, in every copy."""
    bases = [writable(v) if isinstance(v, torch.Tensor) else v for v in first]
    copies = replicate(bases, n)
    expand = [
        tuple(v.shape) if isinstance(v, torch.Tensor) and tuple(v.shape) != tuple(b.shape) else None
        for v, b in zip(first, bases, strict=True)
    ]
    return [first] + [
        [b.expand(shape) if shape is not None else b for b, shape in zip(copy, expand, strict=True)]
        for copy in copies[1:]
    ]


def _same_layout(buffers: list[Any], values: list[Any]) -> bool:
    """Whether `values` fit `buffers` tensor for tensor (shape and dtype), so they can be written in."""
    return len(buffers) == len(values) and all(
        not isinstance(b, torch.Tensor)
        or (isinstance(v, torch.Tensor) and v.shape == b.shape and v.dtype == b.dtype)
        for b, v in zip(buffers, values, strict=True)
    )


def _layout_text(values: list[Any]) -> str:
    return ", ".join(f"{tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}" if isinstance(v, torch.Tensor)
                     else type(v).__name__ for v in values)


class FreshSets:
    """Fresh timed input sets (issue 13, class 1) drawn when a timed call needs one (untimed), so only
    one is alive at a time (issue 9, class 2: a pool of them held up to 1 GiB, or W x 30)."""

    def __init__(self, size: int, draw: Callable[[int], list[Any]]) -> None:
        self.size, self.draw = size, draw

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, j: int) -> list[Any]:
        if not 0 <= j < self.size:
            raise IndexError(j)
        return self.draw(j)


FLIP_CHUNKS = 64  # an input perturbed in place flips the signs of about half of this many chunks


def poison_in_place_(t: torch.Tensor) -> None:
    """`random_poison_` that also takes an inference tensor: an output a candidate (or a reference
    decorated with @torch.inference_mode) created under inference mode accepts in-place writes only
    inside inference mode ("Inplace update to inference tensor outside InferenceMode", seen on the H200
    when re-validation poisoned a captured graph's returned outputs)."""
    with torch.inference_mode(t.is_inference()):
        random_poison_(t)


class LayoutChanged(RuntimeError):
    """A fresh input set's shapes or dtypes differ from the fixed buffers it was to be written into (a
    CUDA graph's): the operator's generator shapes its inputs by the seed on seeds the contract's probe
    did not draw, or only on workloads it did not probe. Not the kernel's failure: the parent confirms it
    with its own draw and times the workload again as a seed-shaped one (modes.py). `seed`: the seed
    the set was drawn from, where the writer knows it."""

    def __init__(self, message: str, seed: int | None = None) -> None:
        super().__init__(message)
        self.seed = seed


def _copy_into_(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst.copy_(src), inside inference mode when `dst` is an inference tensor (see poison_in_place_)."""
    if src.shape != dst.shape:  # fresh values always come in the buffer's own layout (write_inputs)
        raise LayoutChanged(f"a tensor of shape {tuple(src.shape)} for a buffer of {tuple(dst.shape)}")
    with torch.inference_mode(dst.is_inference()):
        dst.copy_(src)


def _flip_signs_(base: torch.Tensor, i: int) -> None:
    """Exact, reversible, memory-free perturbation (no pristine copy fits): the sign bit of every element
    of a different half of `base`'s chunks on each call i (values stay the same magnitudes: valid
    inputs, and a cache keyed on values, a sum or a sample of positions sees another input each time)."""
    if not base.numel() or not base.is_contiguous():
        return
    flat = base.view(-1).view(torch.uint8 if packed(base) else _INT_OF_SIZE[base.element_size()])
    mask = -120 if packed(base) else -(1 << (8 * base.element_size() - 1))  # 0x88: both fp4 nibbles
    if packed(base):
        flat = flat.view(torch.int8)
    step = max(1, -(-flat.numel() // FLIP_CHUNKS))
    rng = random.Random(i)
    flags = [rng.getrandbits(1) for _ in range(0, flat.numel(), step)]
    flags[i % len(flags)] = 1  # never a call with nothing flipped
    for c, flip in enumerate(flags):
        if flip:
            flat[c * step : (c + 1) * step].bitwise_xor_(mask)


_INT_OF_SIZE = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


KEEP_LARGE_BYTES = 4 << 30  # large benches stay resident while they hold at most this (park_large)


def call_has_no_work(outputs: list[Any], inputs: list[Any], mutated: list[int]) -> bool:
    """Every output has zero elements, and so does every input the operator updates in place, or some
    other input it reads is empty (a serving step with no new tokens: the keys to scatter into a KV cache
    and their slots are empty, the cache is not). An honest call then launches nothing, and an empty CUDA
    graph is no sign of work done elsewhere; what the call does to the updated inputs is still compared."""
    if not outputs or not all(type(o) is torch.Tensor and o.numel() == 0 for o in outputs):
        return False
    updated = [inputs[i] for i in mutated if i < len(inputs)]
    if all(type(t) is torch.Tensor and t.numel() == 0 for t in updated):
        return True
    read = [t for i, t in enumerate(inputs) if i not in mutated and type(t) is torch.Tensor]
    return any(t.numel() == 0 for t in read)


def worth_parking(held: int, spare: int) -> bool:
    """Whether large benches holding `held` bytes on a device with `spare` bytes free are parked."""
    return held > min(KEEP_LARGE_BYTES, spare // 8)


def park_large(device: torch.device, keep: Bench | None = None) -> None:
    """Park every other bench holding more than SMALL_BYTES (its graph's pool too) that can be rebuilt
    without memory of its own (regenerated from its seed): a new workload's bench is not built beside
    earlier large ones (issue 9, class 2: MoE experts; round 18: an attention backward's graphs).
    Except where they are modest beside what is free (at most KEEP_LARGE_BYTES and an eighth of the free
    device memory together): parking costs a collection, a synchronization and a cache release each, and
    rebuilding a parked bench on its next round a capture (rmsnorm's five 100 MB workloads: ~0.4 s of a
    3 s warm evaluation)."""
    large = [
        b
        for ref in list(_LIVE)
        if (b := ref()) is not None and b is not keep and b.regenerate and b.resident_bytes > SMALL_BYTES
    ]
    held = sum(b.resident_bytes for b in large)
    if device.type == "cuda" and not worth_parking(held, spare_bytes(device)):
        return
    parked = 0
    for bench in large:
        parked += bench.resident_bytes
        bench.park()
    release(device, freed=parked)  # only when something large was freed (it costs a gc and a sync)


def _make_room(device: torch.device, need: int, keep: Bench) -> int:
    """Park the least recently used other benches until `need` bytes are spare (or none are left);
    the spare bytes then."""
    spare = spare_bytes(device)
    if spare >= need:
        return spare
    others = sorted(
        (b for ref in _LIVE if (b := ref()) is not None and b is not keep and b.resident),
        key=lambda b: b.used,
    )
    for bench in others:
        bench.park()
        spare = spare_bytes(device)
        if spare >= need:
            break
    return spare


class Bench:
    def __init__(
        self,
        runner: KernelRunner,
        first: list[Any],
        device: torch.device,
        l2_bytes: int,
        regenerate: Callable[[], list[Any]] | None = None,
        mutated: list[int] | None = None,
        compared: list[int] | None = None,
    ) -> None:
        """`regenerate`: draws `first` again (from its seed), so a parked bench keeps nothing at all.
        `mutated`: the inputs the operator updates in place (results too, for `no_work`).
        `compared`: those of them it does not return, kept after each timed or burst call beside its
        outputs, as the parent compares them (a KV-cache write skipped only while timed went unseen:
        red team round 23, c03)."""
        self.runner, self.device, self.l2_bytes = runner, device, l2_bytes
        self.regenerate = regenerate
        self.mutated = [int(i) for i in mutated or []]
        self.compared = [int(i) for i in compared or []]
        self.nbytes = value_bytes(first) + output_bytes(runner.out_specs)
        self.violations: list[str] = []
        self.parked: list[Any] | None = None
        self.burst_sets: list[list[Any]] = []  # the next bursts' fresh inputs (stage_burst)
        self.burst_kept: dict[int, list[Any]] = {}  # the last burst's outputs, call by call
        self._sampled_steps = 0  # per-sample steps of this timing loop so far (_look_for_modes)
        # the round's fresh timed sets (use_pool): set before measure() unparks the bench, so not in _setup
        self.pool: list[list[Any]] = []
        self.pool_rng: Callable[[int], int] | None = None
        self.poisons: list[list[torch.Tensor]] = []  # two output poisons, drawn once (_poison_from_pool)
        self.used = next(_CLOCK)
        _LIVE[:] = [r for r in _LIVE if r() is not None]
        _LIVE.append(weakref.ref(self))
        self._setup(first)

    @property
    def resident_bytes(self) -> int:
        """Device or host bytes this bench holds now (0 when parked): its copies, pristine twins and its
        CUDA graph's private pool (the captured calls' temporaries)."""
        if self.parked is not None:
            return 0
        copies, pristine = getattr(self, "copies", []), getattr(self, "pristine", [])
        graph = self.graph.pool_bytes if getattr(self, "graph", None) is not None else 0
        return self.nbytes * max(1, len(copies)) + value_bytes([t for c in pristine for t in c]) + graph

    @property
    def resident(self) -> bool:
        return self.parked is None and self.device.type == "cuda"

    def _setup(self, first: list[Any]) -> None:
        runner, device = self.runner, self.device
        in_bytes, out_bytes = value_bytes(first), output_bytes(runner.out_specs)
        nbytes = in_bytes + out_bytes
        on_gpu = device.type == "cuda"
        self.copies = [first]
        self.outs = [runner.alloc_outputs() if runner.dps else None]
        self.produced: dict[int, Any] = {}
        self.notes: list[str] = []
        self.graph: GraphTimer | None = None
        self.flush: torch.Tensor | None = None  # zeroed before each timed replay (timing.needs_flush)
        self.pristine: list[list[Any]] = []
        self.flip = False  # no pristine copy fits: perturb by in-place sign flips
        self._variants_used: set[int] = set()  # variants of the pristine inputs given out (_unseen_variant)
        self._replaced: set[int] = set()  # copies a fresh set of other shapes replaced (_write_set)
        self._inputs_before: tuple[int, InputSnapshot] | None = None  # timed call i's inputs (keep)
        self.calls_per_sample = 1  # calls in one timed sample (one graph replay, or one call)
        self.host_clock = time.process_time_ns  # host timing's clock (the trusted parent: its thread's)
        if not on_gpu:
            self._keep_pristine(in_bytes, out_bytes, 1)
            t0 = time.perf_counter()
            self.call(0)
            self.first_s = time.perf_counter() - t0
            return
        with span("bench.estimate"):
            est = estimate_us(self.call, 1)
        with span("bench.copies"):
            wanted = rotation_copies(nbytes, self.l2_bytes, est)
            spare = _make_room(device, (wanted - 1) * nbytes, self) if wanted > 1 else 0
            plan = plan_memory(in_bytes, out_bytes, spare, l2_bytes=self.l2_bytes, wanted_copies=wanted)
            n = plan.timed_copies
            if n < wanted:
                self.notes.append(
                    f"{n} of {wanted} rotated copies (limited by free memory): a pass over them is "
                    f"{n * nbytes / 2**20:.0f} MiB, the L2 {self.l2_bytes / 2**20:.0f} MiB"
                )
            self.copies = _replicate(first, n)
            # fresh poisoned outputs: copy 0's hold the estimate's answers
            self.outs = replicate(runner.alloc_outputs(), n) if runner.dps else [None] * n
        self.est_us = est
        calls, self.replays = capture_plan(est, n)
        graph = GraphTimer(self.call, n, calls, warmup_calls(est))
        try:
            with span("bench.capture"):
                graph.capture()
        except Exception as exc:  # not capturable: the tagged CUDA-event fallback
            heal_after_failed_capture(device)  # the default generator may be left in capture mode
            torch.cuda.synchronize()
            self.notes.append(f"not capturable, CUDA-event fallback: {type(exc).__name__}: {exc}"[:500])
            keep = min(n, FALLBACK_COPIES)  # per-call L2 flush there: a few copies suffice
            self.copies, self.outs = self.copies[:keep], self.outs[:keep]
            self._keep_pristine(in_bytes, out_bytes, keep)
            return
        self.graph = graph
        self.calls_per_sample = calls
        self.flush = flush_buffer(device, self.l2_bytes) if needs_flush(n, nbytes, self.l2_bytes) else None
        no_work = self.no_work()
        if no_work and not graph.kernel_nodes:
            self.notes.append("every result is empty: the call has no work (its capture launches nothing)")
        problem = judge_capture(graph.kernel_nodes, calls, no_work)
        if problem and problem not in self.violations:
            self.violations.append(problem)

    def no_work(self) -> bool:
        """Whether an honest call launches nothing here (call_has_no_work), judged on copy 0's outputs (as
        allocated, or as the capture returned them) and inputs."""
        produced = self.outs[0] if self.runner.dps else (self.graph.outputs.get(0) if self.graph else None)
        return call_has_no_work(list(produced or []), list(self.copies[0]), self.mutated)

    def _keep_pristine(self, in_bytes: int, out_bytes: int, copies: int) -> None:
        """Pristine copies of the inputs for eager timing's perturbation, where the memory plan has room;
        else the perturbation flips signs in place (`_flip_signs_`)."""
        plan = plan_memory(in_bytes, out_bytes, spare_bytes(self.device), eager_copies=copies)
        if plan.pristine:
            self.pristine = [clone_values([writable(v) for v in c]) for c in self.copies]
        else:
            self.flip = True
            self.notes.append(
                f"no room for a pristine copy of the inputs ({in_bytes / 2**20:.0f} MiB): timed calls' "
                "inputs are perturbed by exact in-place sign flips"
            )

    @property
    def eager(self) -> bool:
        """Timed call by call (host, CUDA-event fallback): inputs are perturbed before each call."""
        return bool(self.pristine) or self.flip

    def park(self) -> None:
        """Free this bench's memory (device or host), keeping at most its first inputs on the host (none
        when it can regenerate them) to rebuild it."""
        if self.parked is not None:
            return
        self.parked = [] if self.regenerate else to_host(self.copies[0])
        self.copies, self.outs, self.produced, self.pristine = [], [], {}, []
        self.burst_sets, self.burst_kept = [], {}
        self.graph = None
        if self.device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    def _ensure(self) -> None:
        self.used = next(_CLOCK)
        if self.parked is not None:
            parked, self.parked = self.parked, None
            if self.regenerate:
                park_large(self.device, keep=self)
            self._setup(self.regenerate() if self.regenerate else to_device(parked, self.device))

    def call(self, k: int) -> Any:
        """Copy k's call. Its last call's returned outputs are let go first, so a call that returns large
        outputs (an MoE backward's 24 GiB of gradients) never holds two sets of them at once. (On 025 on
        the H200 this alone did not avoid the re-validation's out-of-memory error: the parent's expected
        gradients beside the worker did, round 26, memory.kept_aside.) What the harness keeps of a call is
        taken before the next one (keep, outputs_of)."""
        self.produced.pop(k, None)
        self.produced[k] = self.runner.invoke(self.copies[k], self.outs[k])
        return self.produced[k]

    def use_pool(self, pool: list[list[Any]], rng_seed: Callable[[int], int] | None = None) -> None:
        """Fresh input sets for the eagerly timed calls (issue 13, class 1): call i gets pool[i % len],
        values the kernel has never seen and cannot derive from those it has; the outputs of every timed
        call are kept so the parent can verify any of them after the fact (`kept`).
        `rng_seed(j)`: a random operator's host generators are seeded with it before each call on set j,
        as the parent's reference on that set is (unseeded, its timed calls went unchecked, and a kernel
        skipped them all: red team round 23, c02)."""
        self.pool, self.kept, self.poisons = pool, {}, []
        self.pool_rng = rng_seed

    def _poison_from_pool(self, k: int, i: int) -> None:
        """Random finite garbage into copy k's outputs, copied from two sets drawn once (drawing random
        values for every call cost more than a fast kernel's call: noise in the parent's burst check)."""
        outs = self.outs[k] or []
        if not outs:
            return
        if not self.poisons or not _same_layout(outs, self.poisons[0]):
            # (drawn again where the outputs' shapes changed: an out= resized by a seed-shaped call)
            self.poisons = [[random_poison_(t.clone()) for t in outs] for _ in range(2)]
        for t, p in zip(outs, self.poisons[i % 2], strict=True):
            t.copy_(p)

    def _look_for_modes(self, everything: bool = True, sampled: bool = False, collect: bool = True) -> None:
        """Between timed calls (untimed), before the harness touches the buffers: a torch mode the candidate
        left active during a call and exits before the round's last check, a gc callback, a kernel
        registered for the aten ops the harness is about to run (guards.Sentinel.between_steps) would
        each see the harness's reads and writes here (its deferred work done outside the clock).
        First the youngest garbage is collected (the worker's collector is off, worker.py): the cycles a
        call left are freed call by call, and their finalizers run here, before this step writes the
        next inputs, never between that write and the call.
        `sampled`: a timing loop's step, whose dispatch-table comparison is drawn (guards.dispatch_due).
        `collect=False`: the caller collects itself, later (keep: after the outputs are kept)."""
        if collect:
            collect_here()
        dispatch = dispatch_due(first=not self._sampled_steps) if sampled else True
        self._sampled_steps += sampled
        for found in between_steps_violations(dispatch) if everything else modes_violation():
            if found not in self.violations:
                self.violations.append(found)

    def _unplant(self, k: int) -> None:
        """Before the harness reads or writes copy k (untimed): attributes the kernel set on its tensors
        that shadow torch.Tensor's are removed and recorded (guards.planted_members: a planted `detach`
        ran the call's work when the harness read the output)."""
        allocated = (self.outs[k] or []) if k < len(self.outs) else []  # the outputs the harness made
        produced = (self.produced.get(k) or []) if k < len(self.outs) else []
        made = [*self.copies[k], *allocated]
        for found in planted_violation([*made, *produced], made):
            if found not in self.violations:
                self.violations.append(found)

    def _snapshot(self, k: int) -> list[Any]:
        """What copy k's last call left in its outputs (a tensor cloned, a plain number as it is), then in
        the inputs it updates in place that the parent compares (`compared`)."""
        self._unplant(k)
        outs = self.outs[k] if self.runner.dps else self.produced.get(k) or []
        updated = [self.copies[k][i] for i in self.compared if i < len(self.copies[k])]
        return [_kept_copy(o) for o in [*outs, *updated]]

    def keep(self, i: int) -> None:
        """Timed call i's outputs kept for the parent's spot checks, then its garbage collected: a
        finalizer the call left in a cycle runs only after its outputs are copied (collected first, a
        generator's `finally` finished half of the call's work in the untimed step and was kept as done:
        red team round 23, c06)."""
        self._look_for_modes(sampled=True, collect=False)
        k = i % len(self.copies)
        before = self._inputs_before
        if before is not None and before[0] == i:  # the inputs call i got: unchanged but where the
            # operator updates them (an input used as scratch in timed calls only: red team 23, c04)
            for j in before[1].changed(self.copies[k]):
                found = f"input {j} was modified by the kernel during timed call {i}"
                if j not in self.mutated and found not in self.violations:
                    self.violations.append(found)
        self.kept[i] = self._snapshot(k)
        collect_here()

    def fits_another_layout(self, k: int, values: list[Any]) -> bool:
        """Whether `values` have other shapes than copy k's buffers and may take their place (eagerly:
        a graph's buffers are fixed)."""
        return self.graph is None and not _same_layout(self.copies[k], values)

    def take_set(self, k: int, values: list[Any]) -> None:
        """`values` become copy k's inputs (a set of other shapes than the buffers'); the next pristine
        perturbation puts the bench's own buffers back (perturb)."""
        self._unplant(k)
        self.copies[k] = list(values)
        self._replaced.add(k)

    def _write_set(self, k: int, values: list[Any], i: int) -> None:
        """A fresh input set into copy k (tensors through their buffers, Python scalars as they are), then
        garbage into its outputs: the untimed step before an eager call on fresh inputs. A set whose
        shapes differ from the buffers' (a generator whose shapes follow its seed: ragged rows) takes
        their place on the host instead, so such an operator's timed calls run on fresh inputs the
        parent can draw again and check (red team round 23, c01: none were, and a kernel skipped every
        call on buffers it had seen before). So does a set of other shapes from a generator whose shapes
        change on rare seeds only, which the contract's probe took for fixed (red team round 24: an honest
        kernel got RUNTIME_ERROR). A graph's buffers are fixed: never there."""
        if self.fits_another_layout(k, values):
            self.take_set(k, values)
            self._poison_from_pool(k, i)
            return
        self.write_inputs(k, values)
        for j, v in enumerate(values):
            if not isinstance(v, torch.Tensor):  # a Python scalar input is passed as it is
                self.copies[k][j] = v
        self._poison_from_pool(k, i)

    def perturb(self, i: int, fresh_sets: bool = True, salt: int = 0) -> None:
        """Untimed, before each eagerly timed call: new input values, so a cache keyed on input values
        (or on pointers) cannot skip the work while it is being timed. Graph replays need no such thing:
        Python-level caches do not run during a replay, and re-validation catches device-level ones.
        Only an input's compact base is written (an expanded input's elements share memory).
        `fresh_sets=False`: from the pristine copy (or by sign flips) even where fresh sets are drawn.
        `salt` (the parent's burst seed) moves every roll and scale, so a burst's values are new ones."""
        # (a burst's perturbation: the torch modes alone, ~us)
        self._look_for_modes(everything=fresh_sets, sampled=True)
        k = i % len(self.copies)
        self._unplant(k)
        if fresh_sets and self.pool:  # fresh inputs from the parent's seed (worker side)
            self._write_set(k, self.pool[i % len(self.pool)], i)
            self._inputs_before = (i, InputSnapshot(self.copies[k], exact=False))  # checked at keep(i)
            if self.pool_rng is not None:
                seed_host_generators(self.pool_rng(i % len(self.pool)))
            return
        if self.flip:  # no pristine copy (memory): exact sign flips in place
            for t in self.copies[k]:
                if isinstance(t, torch.Tensor) and (t.dtype.is_floating_point or packed(t)):
                    _flip_signs_(writable(t), i + salt)
            for t in self.outs[k] or []:
                random_poison_(t)
            return
        if k in self._replaced:  # a fresh set of its own shapes sat here (_write_set): the bench's
            self.copies[k] = clone_values(self.pristine[k])  # buffers again
            self._replaced.discard(k)
        factor, roll = self._unseen_variant(k, i, salt)
        for t, p in zip(self.copies[k], self.pristine[k], strict=True):
            if isinstance(t, torch.Tensor) and t.dtype.is_floating_point and t.numel():
                base = writable(t)
                shift = roll % base.numel()  # each position: another value, another scale
                if packed(base):  # packed fp4: its bytes move (no arithmetic on them)
                    base.view(torch.uint8).copy_(p.view(torch.uint8).reshape(-1).roll(shift).reshape(p.shape))
                    continue
                rolled = p.reshape(-1).roll(shift).reshape(p.shape)
                # fp8 has no CPU multiply: scaled in float32
                base.copy_(rolled.float().mul_(factor) if base.dtype in FP8 else rolled.mul_(factor))
        for t in self.outs[k] or []:  # and outputs that are neither NaN nor the last answer
            random_poison_(t)

    def prepare_timed_call(self, i: int) -> None:
        """Untimed, before host-timed call i, in the candidate's worker (the parent's "prepare" step) and
        in the parent timing the reference alike: the perturbation, then the host's caches flushed
        (timing.flush_host_caches), so both calls start from the same cold caches."""
        self.perturb(i)
        flush_host_caches()

    def _unseen_variant(self, k: int, i: int, salt: int) -> tuple[float, int]:
        """(scale, roll) of the pristine inputs for perturbed call i: a variant no earlier call of this
        bench got (issue 13: a cache keyed on input values answered a burst that repeated one set; the
        old fixed grid of scales repeated one in ~3000 calls, and a bf16 input cannot tell most of its
        steps apart). Variants are codes of scale steps the inputs' dtype resolves x rolls of the largest
        input; the code is drawn from (salt, i), so a burst's values are unknown before the parent draws
        its salt, and the next unused code is taken when it was used. Only when every code was used
        (a few elements in a coarse dtype: seldom more than some thousand variants exist) may one repeat."""
        floats = [t for t in self.pristine[k] if isinstance(t, torch.Tensor) and t.dtype.is_floating_point]
        largest = max(floats, key=lambda t: t.numel(), default=None)
        if largest is None or not largest.numel():
            return 1.0, 0
        # the mantissa bits of the dtype (eps = 2**-bits), at most 20: so many scales it tells apart
        bits = 0 if packed(largest) else min(20, round(-math.log2(torch.finfo(largest.dtype).eps)))
        steps = 2**bits - 1 if bits else 1  # scale 1 + step / 2**bits, step >= 1 (packed fp4: no scaling)
        rolls = largest.numel() if bits else max(1, largest.numel() - 1)  # packed: a roll of >= 1
        space = steps * rolls
        if len(self._variants_used) >= space:
            self._variants_used.clear()
        drawn = hashlib.blake2b(f"{salt}:{i}".encode(), digest_size=8).digest()
        code = int.from_bytes(drawn, "little") % space
        while code in self._variants_used:
            code = (code + 1) % space
        self._variants_used.add(code)
        if not bits:
            return 1.0, code + 1
        return 1.0 + (code % steps + 1) * 2.0**-bits, code // steps

    def write_inputs(self, k: int, values: list[Any], seed: int | None = None) -> None:
        """Fresh values into copy k's input buffers (re-validation), through each compact base. A set of
        other shapes raises LayoutChanged before anything is written (a broadcastable one would else be
        copied in silently: a row of values repeated over a longer buffer)."""
        self._ensure()
        if not _same_layout(self.copies[k], values):
            drawn, held = _layout_text(values), _layout_text(self.copies[k])
            raise LayoutChanged(f"copy {k}: a set of {drawn} for buffers of {held}", seed)
        self._unplant(k)
        for buf, val in zip(self.copies[k], values, strict=True):
            if isinstance(buf, torch.Tensor) and isinstance(val, torch.Tensor):
                dst, src = writable(buf), writable(val) if val.shape == buf.shape else val
                if packed(dst):
                    dst, src = dst.view(torch.uint8), src.view(torch.uint8)
                _copy_into_(dst, src)

    def measure(self) -> Timing:
        self._ensure()
        self._sampled_steps = 0  # this loop's first step compares the dispatch tables (guards.dispatch_due)
        n = len(self.copies)
        pool = getattr(self, "pool", None)
        after = self.keep if pool else None
        if self.device.type != "cuda":
            timing = time_host(
                self.call, n, self.first_s, prepare=self.prepare_timed_call, after=after,
                clock=self.host_clock, sets=len(pool) if pool else None,
            )  # fmt: skip
        elif self.graph is None:
            # one fresh input set per timed call; fewer calls where they are long (timing.event_samples)
            samples = event_samples(self.est_us, len(pool) if pool else EVENT_SAMPLES)
            timing = time_events(self.call, n, self.l2_bytes, samples, prepare=self.perturb, after=after)
        else:
            timing = self.graph.measure(self.replays, self.flush)
        timing.notes = self.notes + timing.notes
        return timing

    def set_bytes(self) -> int:
        """Bytes of one fresh input set plus the outputs a call leaves (declared, or as the last call of
        copy 0 returned them): what a burst call on staged inputs keeps."""
        self._ensure()
        outs = self.outs[0] if self.runner.dps else self.produced.get(0) or []
        return value_bytes(self.copies[0]) + value_bytes(list(outs))

    def stage_burst(self, sets: list[list[Any]]) -> None:
        """The next bursts' inputs: set i for burst call i (drawn by the worker from the parent's salt,
        untimed), or none (the last burst's sets and kept outputs are freed either way)."""
        self.burst_sets, self.burst_kept = sets, {}

    def burst(self, reps: int, part: str = "all", salt: int = 0) -> None:
        """`reps` more samples' worth of the timed invocation, back to back, as they were timed: graph
        replays, or (host / CUDA-event fallback) the untimed perturbation then the call; part="prepare"
        does only the perturbations, which the parent subtracts (it times requests; see plausibility).

        Eagerly, with sets staged for this burst (`stage_burst`), call i runs on fresh set i and its outputs
        are kept, so the parent can check any of them afterwards (spotcheck.verify_burst_calls): a kernel
        that recognises a burst cannot skip its work there. The twin copies the same sets and clones as
        many outputs, so what the parent subtracts costs what the burst spends besides its calls.
        Without staged sets (they do not fit in memory) the perturbation is the pristine one: drawing a
        fresh set per call would dwarf a small call in the request the parent times. `salt`, drawn by the
        parent for each burst, moves its values off every earlier call's: a cache keyed on input values
        cannot answer a burst (issue 13)."""
        self._ensure()
        sets = self.burst_sets
        if self.graph is not None:
            for _ in range(reps):
                self.graph.graph.replay()
        elif len(sets) >= reps:
            snapshots = []
            for i in range(reps):
                k = i % len(self.copies)
                self._write_set(k, sets[i], i)
                if part == "all":
                    self.call(k)
                snapshots.append(self._snapshot(k))
            if part == "all":
                self.burst_kept = dict(enumerate(snapshots))
            del snapshots
        else:
            for i in range(reps):
                if self.eager:
                    self.perturb(i, fresh_sets=False, salt=salt)
                if part == "all":
                    self.call(i % len(self.copies))
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    @property
    def last(self) -> int:
        """A copy the timed invocation really uses (a graph of fewer calls than copies skips some)."""
        self._ensure()
        if self.graph is not None:
            return (self.graph.calls - 1) % len(self.copies)
        return len(self.copies) - 1

    def poison_outputs(self, k: int) -> None:
        """Random finite garbage (not NaN) into copy k's outputs before the re-validation replay."""
        self._ensure()
        targets = self.outs[k] if self.runner.dps else (self.graph.outputs.get(k) if self.graph else None)
        # an output that is an input updated in place (a KV cache the operator returns) holds the fresh
        # values re-validation just wrote: poisoning it would change the very input the call must read
        inputs = {v.untyped_storage().data_ptr() for v in self.copies[k] if isinstance(v, torch.Tensor)}
        for t in targets or []:
            if type(t) is torch.Tensor and t.untyped_storage().data_ptr() not in inputs:
                poison_in_place_(writable(t))

    def outputs_of(self, k: int) -> list[Any]:
        """Copy k's outputs as the last call or replay left them."""
        self._unplant(k)
        return list(self.outs[k]) if self.runner.dps else list(self.produced[k])

    def replay(self, k: int) -> list[Any]:
        """Run the timed invocation once more (the graph itself when captured); copy k's outputs."""
        self._ensure()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        if self.graph is not None:
            self.graph.replay_once()
        else:
            self.call(k)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        return self.outputs_of(k)
