"""The trusted side's reference: inputs regenerated from the same seeds, reference outputs computed in
this process (which never imports the candidate), and the reference's own latency measured the same way."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from .bench import Bench, park_large
from .inputs import GeneratorFailed, InputFactory, out_of_memory, output_shapes
from .memory import release
from .modules import load_input_module, load_reference
from .opmodel import Operator
from .runner import KernelRunner, digest, interpreted_autotune
from .speed_of_light import FlopCounter, shares_memory
from .timing import (
    TimedSets,
    Timing,
    flush_host_caches,
    host_reference_timing,
    summarize,
    time_events,
    timed_seed,
)


class ReferenceFailed(RuntimeError):
    """The operator's own reference raised: the operator cannot be evaluated where it is (a dtype the device
    has no kernel for, seen on the H200: int64 matmul on CUDA), whatever the candidate. Not a harness
    failure; running out of memory stays the environment's."""


class _ReferenceRunner(KernelRunner):
    """The reference's runner: what it raises is said as the reference's, with the workload."""

    def __init__(self, workload: str, dtypes: list[str], *args: Any) -> None:
        super().__init__(*args)
        self.workload, self.dtypes = workload, dtypes

    def invoke(self, *args: Any, **kwargs: Any) -> list[Any]:
        try:
            return super().invoke(*args, **kwargs)
        except Exception as exc:
            if out_of_memory(exc):
                raise
            raise ReferenceFailed(
                f"the operator's reference raised on {self.device.type} (workload {self.workload}): "
                f"{type(exc).__name__}: {str(exc)[:500]}; it cannot be evaluated on this device"
                f"{fp4_hint(self.dtypes, self.device)}: fix its reference, or evaluate where it runs"
            ) from exc


def _timed_call(runner: KernelRunner, inputs: list[Any], rng_seed: int) -> tuple[list[Any], float]:
    """One reference call and its wall seconds."""
    t0 = time.perf_counter()
    result = runner.invoke(inputs, rng_seed=rng_seed)
    return result, time.perf_counter() - t0


def fp4_hint(dtypes: list[str], device: torch.device) -> str:
    """Why a reference with fp4 tensors fails on a GPU older than Blackwell: cuBLAS has no fp4 matmul
    there (CUBLAS_STATUS_NOT_SUPPORTED on the H200 for every nvfp4 problem of the public benchmark)."""
    if device.type != "cuda" or not any("float4" in d for d in dtypes):
        return ""
    major, minor = torch.cuda.get_device_capability(device)
    if major >= 10:
        return ""
    return f" (fp4 matmuls need an sm_100 GPU or later, such as a B200; this one is sm_{major}{minor})"


OWN_SETS_NOTE = "the reference timed on the candidate's own timed sets (the operator's generator draws them)"


class Reference:
    def __init__(self, op: Operator, device: torch.device, init_seed: int) -> None:
        self.op, self.device, self.init_seed = op, device, init_seed
        self.bench_layouts: dict[tuple[int, int], list[Any]] = {}  # (workload, bench seed): shapes_differ
        if device.type == "cpu":  # a Triton reference (SOL allows one) runs interpreted, as the worker does
            os.environ.setdefault("TRITON_INTERPRET", "1")
        self.module = load_reference(op)
        if device.type == "cpu":
            interpreted_autotune()
        self.factory = InputFactory(op, device, self.module, load_input_module(op))
        self.models: dict[int, Any] = {}
        self.benches: dict[int, Bench] = {}
        self.generation_s: dict[int, float] = {}  # the fastest draw of each workload's inputs (inputs)
        self.uncapturable: set[int] = set()  # workloads whose reference a CUDA graph cannot capture

    def runner(self, idx: int) -> KernelRunner:
        workload = self.op.workloads[idx].id
        dtypes = [s.dtype for s in (*self.op.inputs, *self.op.outputs)]
        if self.op.kind != "native":
            return _ReferenceRunner(
                workload,
                dtypes,
                self.module.run,
                False,
                output_shapes(self.op, self.op.workloads[idx]),
                self.device,
                [s.name for s in self.op.outputs],
            )
        if idx not in self.models:
            torch.manual_seed(self.init_seed)
            self.models[idx] = self.module.Model(**self.op.workloads[idx].init_kwargs).to(self.device).eval()
        return _ReferenceRunner(workload, dtypes, self.models[idx], False, [], self.device)

    def inputs(self, idx: int, seed: int, scale: float, mix: int | None = None) -> list[Any]:
        """Workload `idx`'s inputs for (seed, scale); how long drawing them takes is kept (the fastest
        draw: the first may compile), so the worker is asked for no more fresh timed sets than the
        operator's generator draws in a couple of seconds (memory.generator_sets)."""
        try:
            t0 = time.perf_counter()
            drawn = self.factory.make(self.op.workloads[idx], seed, scale, mix)
            took = time.perf_counter() - t0
            self.generation_s[idx] = min(took, self.generation_s.get(idx, took))
            return drawn
        except GeneratorFailed as exc:  # said as the operator's, as a raising reference is
            raise ReferenceFailed(
                f"{exc}; it cannot be evaluated on this device: fix its generator, or evaluate where it runs"
            ) from exc

    def outputs(
        self, idx: int, inputs: list[Any], count_flops: bool = False, rng_seed: int | None = None
    ) -> tuple[list[Any], int | None]:
        """`rng_seed`: torch's generators seeded for the call, as the candidate's call on the same seed
        is (a reference that draws random numbers; see KernelRunner.invoke)."""
        runner = self.runner(idx)
        if not count_flops:
            return runner.invoke(inputs, rng_seed=rng_seed), None
        try:
            with FlopCounter() as counter:
                result = runner.invoke(inputs, rng_seed=rng_seed)
            return result, counter.total
        except Exception:  # the counter cannot trace every reference: count nothing rather than fail
            return runner.invoke(inputs, rng_seed=rng_seed), None

    def contract(self, idx: int, after_call: Callable[[float], None] | None = None) -> dict[str, Any]:
        """The reference's in-place contract, probed once on workload `idx` (see in_place_contract), and
        whether it is `stochastic`: its outputs on the same inputs differ when torch's generators are
        seeded differently (dropout, sampling). A stochastic reference is compared only on calls seeded
        like its own (the correctness calls): timed calls cannot be seeded (a CUDA graph, a burst).
        `after_call` is told each probe call's seconds as it returns, two calls at least (cpu_budget.py:
        it may stop a hopeless CPU evaluation there by raising)."""
        seed, runner = self.init_seed, self.runner(idx)

        def call(inputs: list[Any], rng_seed: int) -> list[Any]:
            result, seconds = _timed_call(runner, inputs, rng_seed)
            if after_call is not None:
                after_call(seconds)
            return result

        inputs = self.inputs(idx, seed, 1.0)
        before = digest(inputs)
        result = call(inputs, seed)
        contract = in_place_contract(inputs, before, result)
        first, layout = _fingerprint(result), _layout(inputs)
        del inputs, result  # one input set alive at a time (large operators: memory.py)

        def again(input_seed: int, rng_seed: int) -> Any:
            return _fingerprint(call(self.inputs(idx, input_seed, 1.0), rng_seed))

        # random draws, not merely a nondeterministic device reduction (atomics differ on the same seed too,
        # and stay judged by the tolerance with every check in place)
        contract["stochastic"] = first == again(seed, seed) != again(seed, seed + 1)
        # a custom generator whose tensors' shapes depend on the seed (ragged lengths drawn at random):
        # fresh values cannot be written into a bench's fixed buffers (timed sets, re-validation)
        # several seeds: a few ragged rows can sum to the same length on two seeds (seen on the H200: 4 rows
        # of 0-10 values matched, and fixed buffers then met a set of another length); one set at a time
        # (seeds hashed as the timed sets' are, not consecutive ones: a generator that shapes by a high bit
        # of its seed agreed on seed+1..+4 and differed on half the timed sets: red team round 24)
        contract["layout_varies"] = self.seed_may_shape and any(
            layout != _layout(self.inputs(idx, timed_seed(seed, k), 1.0)) for k in range(1, LAYOUT_SEEDS + 1)
        )
        return contract

    def call_s(self, idx: int, seed: int) -> float:
        """Seconds of one call of workload `idx` on the set of `seed` (drawn untimed): the CPU budget's
        look at another seed's set (session.Session._cpu_budget)."""
        return _timed_call(self.runner(idx), self.inputs(idx, seed, 1.0), seed)[1]

    @property
    def seed_may_shape(self) -> bool:
        """Whether the operator's inputs can take their shapes from the seed: a generator of its own (a
        custom entrypoint, a native operator's); random tensors of declared shapes and blobs are fixed."""
        return self.op.kind == "native" or bool(self.op.custom_inputs_entrypoint)

    def shapes_differ(self, idx: int, seed: int, bench_seed: int) -> bool:
        """Whether workload `idx`'s inputs drawn from `seed` have other shapes than those drawn from the
        bench's seed (kept: asked again each timing round): the parent's own look at a worker's report
        that fixed buffers met a set of other shapes (bench.LayoutChanged), and its search for a
        re-validation set that fits them. One set alive at a time."""
        return _layout(self.inputs(idx, seed, 1.0)) != self.bench_layout(idx, bench_seed)

    def bench_layout(self, idx: int, bench_seed: int) -> list[Any]:
        """The shapes and dtypes of workload `idx`'s bench set, drawn once per bench seed."""
        if (idx, bench_seed) not in self.bench_layouts:
            self.bench_layouts[idx, bench_seed] = _layout(self.inputs(idx, bench_seed, 1.0))
        return self.bench_layouts[idx, bench_seed]

    def revalidation_inputs(
        self, idx: int, seed: int, scale: float, scalars: list[Any] | None, bench_seed: int
    ) -> list[Any]:
        """The re-validation's inputs: fresh tensors for (seed, scale); Python scalars as the worker used
        them (`scalars`), which may only be the fresh ones or those the timed invocation was captured
        with (bench seed: a CUDA graph keeps the scalars it was captured with, e.g. a custom generator's
        max_seqlen). Anything else is left as it is, and the inputs' digests then differ."""
        inputs = self.inputs(idx, seed, scale)
        if not scalars or len(scalars) != len(inputs):
            return inputs
        if all(isinstance(v, torch.Tensor) or v == s for v, s in zip(inputs, scalars, strict=True)):
            return inputs
        captured = self.inputs(idx, bench_seed, 1.0)
        triples = zip(inputs, scalars, captured, strict=True)
        if all(isinstance(v, torch.Tensor) or s == c for v, s, c in triples):
            return [v if isinstance(v, torch.Tensor) else s for v, s in zip(inputs, scalars, strict=True)]
        return inputs

    def time(self, idx: int, bench_seed: int, l2_bytes: int) -> Any:
        if idx not in self.benches:
            park_large(self.device)  # no large bench of another workload beside this one (memory.py)
            self.benches[idx] = Bench(
                self.runner(idx),
                self.inputs(idx, bench_seed, 1.0),
                self.device,
                l2_bytes,
                regenerate=lambda: self.inputs(idx, bench_seed, 1.0),
            )
        bench = self.benches[idx]
        if self.device.type == "cuda":
            return bench.measure()
        with host_reference_timing() as clock:
            bench.host_clock = clock
            return bench.measure()

    def time_on_sets(
        self, idx: int, rounds: list[TimedSets], l2_bytes: int, bench_seed: int | None
    ) -> Timing:
        """The reference timed on the fresh sets a kernel's kept rounds were timed on (timing.TimedSets),
        as the worker timed them: a call per set, or (on a GPU) the sets in a CUDA graph's copies. Each
        round's figure, then the median of the rounds: how the kernel's latency is summed up from its
        rounds (modes._workload_entry). One set alive at a time, after one untimed call on the first (the
        kernel's timed calls, too, follow calls of its own). On a host each call starts from flushed
        caches; on a GPU: `_gpu_round`."""
        runner = self.runner(idx)
        first = timed_seed(int(rounds[0].seed), 0)  # type: ignore[arg-type]
        if self.device.type == "cuda":
            runner.invoke(self.inputs(idx, first, 1.0))
            timings = [self._gpu_round(runner, idx, r, l2_bytes, bench_seed) for r in rounds]
        else:
            with host_reference_timing() as clock:
                runner.invoke(self.inputs(idx, first, 1.0))
                timings = [self._host_round(runner, idx, r, clock) for r in rounds]
        samples = [v for t in timings for v in t.samples_us]
        method = "cuda_graph" if any(t.method == "cuda_graph" for t in timings) else timings[0].method
        median = statistics.median(t.latency_us for t in timings)
        return Timing(median, summarize(samples)[1], samples, method, None, [OWN_SETS_NOTE])

    def _host_round(self, runner: KernelRunner, idx: int, sets: TimedSets, clock: Any) -> Timing:
        """One round's figure on a host: a call per set, each from flushed caches, by the parent's clock
        (nanoseconds); their median."""
        mine = []
        for j in range(sets.count):
            inputs = self.inputs(idx, timed_seed(int(sets.seed), j), 1.0)  # type: ignore[arg-type]
            flush_host_caches()  # from cold caches, as the worker's timed calls (Bench)
            t0 = clock()
            runner.invoke(inputs)
            mine.append((clock() - t0) / 1e3)
            del inputs
        return Timing(*summarize(mine), mine, "host_interpreter")

    def _gpu_round(
        self, runner: KernelRunner, idx: int, sets: TimedSets, l2_bytes: int, bench_seed: int | None
    ) -> Timing:
        """One round's figure on a GPU. Calls timed by CUDA events (they could not be captured) ran one per
        set: the reference is timed by the same event loop (timing.time_events: an L2 flush and an idle
        device before each call) with set j drawn before call j, untimed; the median. A graph's replays
        rotated over copies holding the sets: the reference's own graph over copies holding the same sets,
        made as the worker made the kernel's (from the bench's set, then set k written into copy k); a
        reference that cannot be captured is timed a call per set, and their mean, as a replay's is.
        Timed on the bench's one set instead, a kernel on the usual sets met a reference on a rare long
        one (red team round 27's h01, on the GPU: a padded batch whose valid rows follow the seed)."""
        park_large(self.device)  # no reference bench of another workload beside these sets
        if sets.rotated and bench_seed is not None and idx not in self.uncapturable:
            draw = lambda: self.inputs(idx, bench_seed, 1.0)  # noqa: E731
            bench = Bench(runner, draw(), self.device, l2_bytes, regenerate=draw)
            try:
                if bench.graph is not None:
                    for k in range(len(bench.copies)):
                        seed = timed_seed(int(sets.seed), k)  # type: ignore[arg-type]
                        bench.write_inputs(k, self.inputs(idx, seed, 1.0), seed)
                    return bench.measure()
                self.uncapturable.add(idx)
            finally:
                bench.park()
        drawn: dict[str, Any] = {}  # the one set alive

        def draw_set(j: int) -> None:
            drawn.pop("set", None)  # the last set goes before the next is drawn
            drawn["set"] = self.inputs(idx, timed_seed(int(sets.seed), j), 1.0)  # type: ignore[arg-type]

        call = lambda _k: runner.invoke(drawn["set"])  # noqa: E731
        timing = time_events(call, 1, l2_bytes, sets.count, prepare=draw_set)
        if sets.rotated:  # a replay's figure is the mean over its copies' sets
            timing.latency_us = statistics.fmean(timing.samples_us)
        return timing

    def release_benches(self) -> None:
        """Drop the reference's timing benches (their rotated copies and graphs): a long-lived parent
        (serve.py) must leave the next candidate's worker the memory a cold evaluation would; the
        latencies they measured are in the reference-timing cache."""
        self.benches.clear()
        release(self.device, force=True)


def contract_note(contract: dict[str, Any], op: Operator) -> dict[str, Any]:
    """What the reference's contract changed in the evaluation, said plainly in the result."""
    names = [s.name for s in op.inputs]
    notes = []
    if contract.get("stochastic"):
        notes.append(
            "the reference draws random numbers: outputs are compared on calls seeded alike (torch's "
            "generators): correctness calls, and on a host the timed calls; a GPU's timed calls (graph "
            "replays, bursts) cannot be seeded and are not compared"
        )
    if contract.get("layout_varies"):
        notes.append(
            "the inputs' shapes depend on the seed (custom generator): on a host each timed call gets a "
            "fresh set of its own shapes, checked afterwards; on a GPU timed calls keep one input set, "
            "without fresh sets, re-validated only where a fresh seed drew the set's shapes again"
        )
    return {
        "stochastic": bool(contract.get("stochastic")),
        "layout_varies": bool(contract.get("layout_varies")),
        "updates_inputs": [names[i] for i in contract.get("mutated", []) if i < len(names)],
        "note": "; ".join(notes),
    }


LAYOUT_SEEDS = 4  # seeds besides the first a generator's shapes are compared on (chance both agree: tiny)


def _layout(values: list[Any]) -> list[Any]:
    """What fixed buffers must agree on: each tensor's shape and dtype (Python scalars may differ)."""
    return [(tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else None for v in values]


def _fingerprint(outputs: list[Any]) -> tuple[list[float], list[Any]]:
    """Outputs compared exactly: their tensors' digests and their Python values."""
    tensors = [r for r in outputs if isinstance(r, torch.Tensor)]
    return digest(tensors), [r for r in outputs if not isinstance(r, torch.Tensor)]


def in_place_contract(inputs: list[Any], before: list[float], result: list[Any]) -> dict[str, Any]:
    """What the reference itself does to its inputs, which is then the operator's contract (a KV-cache
    write `cache[:, pos] = k; return ..., cache`): `mutated` input indices (their digest changed),
    `returned` {output index: input index} for outputs that are inputs, and `compared` the mutated inputs
    not returned, which are compared like extra outputs."""
    after = digest(inputs)
    mutated = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    returned = {
        j: i for j, out in enumerate(result) for i, inp in enumerate(inputs) if shares_memory(out, inp)
    }
    compared = [i for i in mutated if i not in returned.values()]
    return {"mutated": mutated, "returned": returned, "compared": compared}
