"""The untrusted worker: the only process that imports the candidate.

It regenerates inputs from the seeds the parent sends, poisons outputs, calls the candidate under the
guards, times it, and sends back outputs and measurements. It never sees a reference output.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import torch

from .bench import Bench, FreshSets, LayoutChanged, park_large
from .candidate import CompileError, import_candidate, read_spec
from .fingerprint import InputSnapshot
from .guards import Sentinel, output_violations, planted_violation, quiet_library_threads
from .hostclock import ANSWER, CALL, FAILED, FINISH, NOOP, OK, PREPARE, STEP, read_exact
from .inputs import InputFactory, host_out_of_memory, output_shapes
from .isolate import memory_limit_bytes
from .layout import clone_like, clone_values, value_bytes, writable
from .loading import load_operator
from .memory import (
    BURST_BYTES,
    SMALL_BYTES,
    burst_sets_fit,
    collect_here,
    fresh_sets,
    keep_collector_off,
    output_bytes,
    plan_memory,
    release,
    release_cached,
    spare_bytes,
)
from .modules import load_input_module, load_reference
from .native_builds import REFUSED as REFUSED_BUILDS
from .native_builds import guard as guard_native_builds
from .opmodel import Operator, OperatorError
from .phases import process_start
from .protocol import Channel, ChannelClosed
from .runner import KernelRunner, ReturnError, digest, same_bits
from .sharedinputs import open_inputs
from .shm import Region, sealed
from .spans import snapshot as spans_snapshot
from .spans import span
from .timing import host_reps, steady_host_allocator, timed_seed

T = TypeVar("T")
TIMELINE: dict[str, float] = {"torch_imported": time.perf_counter()}  # start-up milestones (phases.py)


class DrawOutOfMemory(Exception):
    """The harness's own input draw in the worker ran out of host memory: the environment's shortfall
    (a host too small for the operator's inputs), not the kernel's, which has not been called yet."""


def with_room(
    step: Callable[[], T],
    benches: dict[int, Bench],
    device: torch.device,
    bench: Bench | None = None,
    said: list[str] | None = None,
    keep_outputs: bool = False,
) -> T:
    """`step()` (a bench's timing loop, or the making of a new workload's bench), and once more after
    the device ran out of memory, with every other bench parked and the cache handed back: what filled
    the device may be the harness's own (earlier workloads' benches and graph pools, the cache's
    fragments: an attention backward's timing asked for 11 GiB beside 16 GiB of graph pools and 18 GiB
    cached but unusable, round 20 on the H200; a new bench's first call beside 57 GiB of graph pools,
    round 22). A call that does not fit even then fails as it did (RUNTIME_ERROR), its error noting what
    the harness held. Nothing is gained by a kernel that runs out of memory on purpose: the second try is
    the first one again, checked alike. `said`: a line on the retry, for the workload's notes.
    `keep_outputs`: the step is not the timing loop (re-validation), whose kept outputs stay for the
    parent's checks."""
    try:
        return step()
    except torch.OutOfMemoryError:
        pass  # (outside the handler: the error's frames hold the failed step's tensors)
    if bench is not None and not keep_outputs:
        bench.kept = {}  # the failed loop's kept outputs
    others = [b for b in benches.values() if b is not bench and b.regenerate and b.parked is None]
    held = sum(b.resident_bytes for b in others)
    pools_before = graph_pool_bytes(device)
    for other in others:
        other.park()
    release(device, force=True)
    line = (
        f"ran out of device memory; made room by parking {len(others)} other benches "
        f"({held / 2**30:.1f} GiB by their count) and handing the cache back: graph pools "
        f"{pools_before / 2**30:.1f} -> {graph_pool_bytes(device) / 2**30:.1f} GiB, "
        f"{torch.cuda.memory_reserved(device) / 2**30 if device.type == 'cuda' else 0:.1f} GiB reserved"
    )
    if said is not None:
        said.append(line)
    try:
        return step()
    except torch.OutOfMemoryError as exc:
        exc.add_note(f"(a second try: {line})")
        raise


def graph_pool_bytes(device: torch.device) -> int:
    """Device memory in CUDA graphs' private pools (the allocator's own segments, walked only after an
    out-of-memory error: what the harness's benches hold there, whatever their own count says)."""
    if device.type != "cuda":
        return 0
    try:
        segments = torch.cuda.memory_snapshot()
    except Exception:
        return 0
    return sum(
        int(s.get("total_size", 0)) for s in segments if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0)
    )


def _failure(exc: BaseException) -> dict[str, Any]:
    text = "".join(traceback.format_exception(exc)[-8:])
    name = type(exc).__name__
    module = type(exc).__module__ or ""
    compile_like = "CompilationError" in name or module.startswith("triton.compiler")
    if isinstance(exc, ReturnError):
        return {"status": "INCORRECT", "message": str(exc)}
    if isinstance(exc, DrawOutOfMemory):
        return {"status": "INFRA_ERROR", "message": str(exc)}
    if host_out_of_memory(exc):
        limit = memory_limit_bytes()
        return {
            "status": "RUNTIME_ERROR",
            "message": f"the kernel exceeded the worker's memory limit ({limit / 2**30:.1f} GiB of host "
            f"memory): {name}: {str(exc)[:300]}",
        }
    hint = ""
    if isinstance(exc, TypeError) and "positional argument" in str(exc):
        hint = (
            "\n(the harness calls run(*inputs, *outputs) by default, writing into the outputs it allocates; "
            "a kernel that returns its outputs instead declares DESTINATION_PASSING_STYLE = False)"
        )
    message = f"{name}: {exc}{hint}\n{text}"
    return {
        "status": "COMPILE_ERROR" if compile_like else "RUNTIME_ERROR",
        "message": message[:4000] if hint else message[-4000:],  # (the hint first, where it is one)
    }


def _sendable(r: Any) -> Any:
    """An output as the parent receives it: a tensor, a Python number (a `shape: null` output), else None."""
    if type(r) is torch.Tensor:
        return torch.Tensor.detach(r)  # torch's own, whatever the instance carries (guards.planted_members)
    return r if type(r) in (int, float, bool) else None


_CHECK = Sentinel.violations  # bound before any candidate runs; a replaced class method is reported


class Worker:
    def __init__(self, op_dir: Path, kernel_dir: Path, device: torch.device) -> None:
        """The operator is read at `load`: until then the parent has not written the job's view of it
        (only the workloads it evaluates: opview.py)."""
        self.op_dir, self.kernel_dir, self.device = op_dir, kernel_dir, device
        if device.type == "cuda":  # CUDA init sets CUDA_MODULE_LOADING; do it before the snapshot
            torch.empty(1, device=device)
            torch.cuda.synchronize()
            TIMELINE["cuda_ready"] = time.perf_counter()
        with contextlib.suppress(ImportError):  # most candidates import it: pay that while the parent
            import triton  # noqa: F401  (loads the operator and its references)
        TIMELINE["triton_imported"] = time.perf_counter()
        self.target: Any = None
        self.dps = True
        self.models: dict[int, Any] = {}
        self.benches: dict[int, Bench] = {}
        self.init_seed = 0
        self.local: dict[int, int] = {}  # the parent's workload index -> the view's
        self.pending_reval: dict[int, Any] = {}  # host steps: a re-validation drawn to come last
        self.chan: Any = None

    def _operator(self, msg: dict[str, Any]) -> None:
        self.op: Operator = load_operator(self.op_dir)
        chosen = [int(i) for i in msg.get("workloads") or range(len(self.op.workloads))]
        if len(chosen) != len(self.op.workloads):
            raise OperatorError(f"the view holds {len(self.op.workloads)} workloads, not {len(chosen)}")
        self.local = {parent: local for local, parent in enumerate(chosen)}
        self.ref_module = load_reference(self.op)
        self.factory = InputFactory(self.op, self.device, self.ref_module, load_input_module(self.op))
        quiet_library_threads()  # guards.py: why
        guard_native_builds(self.kernel_dir)  # native_builds.py: C++ built at run time is read as it builds
        self.sentinel = Sentinel(self.kernel_dir)  # captured before the candidate is imported

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def load(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.init_seed = int(msg.get("init_seed", 0))
        # what the reference itself does to its inputs (the parent probed it): allowed, and compared
        self.contract = msg.get("contract") or {"mutated": [], "returned": {}, "compared": []}
        try:
            self._operator(msg)
            spec = read_spec(self.kernel_dir, self.op.kind == "native")
            self.target, self.dps = import_candidate(
                spec, device_type=self.device.type, build_timeout=msg.get("build_timeout")
            )
        except OperatorError as exc:  # the view the parent wrote: the harness's fault, never the kernel's
            return {"error": {"status": "INFRA_ERROR", "message": f"worker setup failed: {exc}"[-4000:]}}
        except CompileError as exc:  # MissingToolchain (a CompileError) is INFRA_ERROR
            if REFUSED_BUILDS:  # its import failed on a build the scan refused: that is the finding
                return {"violations": _CHECK(self.sentinel), "dps": False}
            return {"error": {"status": getattr(exc, "status", "COMPILE_ERROR"), "message": str(exc)[-4000:]}}
        if self.op.kind == "native":
            self.dps = False
        if self.device.type == "cpu" and torch.get_num_threads() != 1:
            torch.set_num_threads(1)  # a kernel's import-time choice: timed on one thread, as the reference
        return {"violations": _CHECK(self.sentinel), "dps": self.dps}

    def runner(self, idx: int) -> KernelRunner:
        wl = self.op.workloads[idx]
        if self.op.kind != "native":
            names = [s.name for s in self.op.outputs]
            return KernelRunner(self.target, self.dps, output_shapes(self.op, wl), self.device, names)
        if idx not in self.models:
            torch.manual_seed(self.init_seed)
            ref = self.ref_module.Model(**wl.init_kwargs)
            torch.manual_seed(self.init_seed)
            model = self.target(**wl.init_kwargs)
            with contextlib.suppress(Exception):  # another parameter layout: rely on the seeded init
                model.load_state_dict(ref.state_dict())
            self.models[idx] = model.to(self.device).eval() if hasattr(model, "to") else model
        return KernelRunner(self.models[idx], False, [], self.device)

    def checked_call(
        self,
        runner: KernelRunner,
        inputs: list[Any],
        outputs: list[Any] | None,
        earlier: list[torch.Tensor],
        rng_seed: int | None = None,
        exact: bool = True,
    ) -> tuple[list[Any], list[str]]:
        """One call under the checks; `exact`: inputs compared with a clone, else by fingerprint (memory)."""
        originals = InputSnapshot(inputs, exact)
        result = runner.invoke(inputs, outputs, rng_seed=rng_seed)
        # first, before any method of a tensor the kernel touched runs (guards.planted_members)
        made = [*(outputs or []), *inputs]
        violations: list[str] = planted_violation([*result, *made], made)
        if self.device.type == "cuda":
            torch.cuda.current_stream().synchronize()
            # an expanded output through its base (layout.py): its clone would be its logical size
            snap = [writable(r).clone() if type(r) is torch.Tensor else r for r in result]
            torch.cuda.synchronize()
            if any(
                type(r) is torch.Tensor and not same_bits(writable(r), s)
                for r, s in zip(result, snap, strict=True)
            ):
                violations.append(
                    "outputs changed after the call returned (work left running on another stream)"
                )
        violations += output_violations(
            result if not runner.dps else [], inputs, earlier, self.device, self.contract["returned"]
        )
        for i in originals.changed(inputs):
            if i not in self.contract["mutated"]:
                violations.append(f"input {i} was modified by the kernel")
        violations += _CHECK(self.sentinel)
        return result, violations

    def run(self, msg: dict[str, Any]) -> dict[str, Any]:
        idx = int(msg["wl"])
        wl = self.op.workloads[idx]
        runner = self.runner(idx)
        outputs, digests, after, violations, kept, alive = [], [], [], [], [], []
        plan, nbytes = None, 0
        try:
            shared = msg.get("shared")  # on a host: the parent's own files (sharedinputs.py)
            for n, (seed, scale, mix) in enumerate(msg["seeds"]):
                if n:  # the last call's garbage (and its finalizers) before this seed's draw; the request's
                    collect_here()  # top collected before the first
                with span("w.inputs"), self._harness_draw(wl.id):
                    if shared:
                        inputs = open_inputs(shared[n])
                    else:
                        mixed = None if mix is None else int(mix)
                        inputs = self.factory.make(wl, int(seed), float(scale), mixed)
                if plan is None:  # memory.py: earlier seeds and a clone only while they are small and fit
                    nbytes = value_bytes(inputs)
                    out_bytes = output_bytes(runner.out_specs)
                    plan = plan_memory(nbytes, out_bytes, spare_bytes(self.device), seeds=len(msg["seeds"]))
                if plan.keep_seeds:  # no seed's inputs may reuse an earlier seed's memory (pointer caches)
                    alive.append(inputs)
                with span("w.digest"):
                    digests.append(digest(inputs))
                outs = runner.alloc_outputs() if runner.dps else None
                with span("w.checked_call"):
                    result, found = self.checked_call(
                        runner, inputs, outs, kept, int(seed), plan.clone_inputs
                    )  # seeded as the reference
                with span("w.digest"):
                    after.append(digest(inputs))  # the parent compares these with its own inputs
                violations += found
                kept += [r for r in result if type(r) is torch.Tensor]
                result = [*result, *(inputs[i] for i in self.contract["compared"])]  # updated in place
                outputs.append([_sendable(r) for r in result])
                del inputs, outs, result  # freed before the next seed's are drawn (unless kept above)
                if found:
                    break
        except BaseException as exc:
            return {"error": _failure(exc)}
        finally:
            alive.clear()
            release(self.device, freed=nbytes * len(msg["seeds"]))
        if violations:  # nothing of a cheating call's output is needed (or touched again)
            outputs = []
        return {
            "outputs": outputs,
            "digests": digests,
            "after_digests": after,
            "violations": violations,
            "spans": spans_snapshot(),  # advisory: where this process says its time went (never judged)
        }

    @contextlib.contextmanager
    def _harness_draw(self, workload: str) -> Iterator[None]:
        """Around the harness's own correctness draw on a host: running out of memory there is the
        host's shortfall (DrawOutOfMemory), said with the worker's limit."""
        try:
            yield
        except Exception as exc:
            if self.device.type != "cpu" or not host_out_of_memory(exc):
                raise
            raise DrawOutOfMemory(
                f"the harness's input draw of workload {workload} ran out of the worker's host memory "
                f"({memory_limit_bytes() / 2**30:.1f} GiB at most): {type(exc).__name__}: {str(exc)[:300]}; "
                "evaluate on a GPU (--device cuda) or on a host with more memory"
            ) from exc

    def time(self, msg: dict[str, Any]) -> dict[str, Any]:
        idx = int(msg["wl"])
        try:
            retried: list[str] = []  # a line on each out-of-memory retry, for the notes (with_room)
            with span("w.bench_setup"):
                with_room(lambda: self._bench(idx, msg), self.benches, self.device, said=retried)
            bench = self.benches[idx]
            reval = None
            if msg.get("reval") is not None and msg.get("reval_first"):  # the order is the parent's draw
                with span("w.revalidate"):
                    reval = self._revalidate_with_room(idx, bench, msg["reval"], retried)
            with span("w.fresh_inputs"):
                fresh_copies = self._fresh_inputs(idx, bench, msg)
            if msg.get("steps") and self.device.type != "cuda":  # the parent times each call (hostclock.py)
                self.pending_reval[idx] = reval if reval is not None else msg.get("reval")
                bench.kept = {}
                reps = host_reps(bench.first_s, sets=len(bench.pool) or None)  # no set used twice
                return {"reps": reps, "calls": 1, "notes": list(bench.notes), "violations": []}
            with span("w.measure"):
                timing = self._measure(bench, retried)
            reply: dict[str, Any] = {
                "latency_us": timing.latency_us,
                "spread_pct": timing.spread_pct,
                "samples_us": timing.samples_us,
                "method": timing.method,
                "kernels_per_call": timing.kernels_per_call,
                "calls": bench.calls_per_sample,
                "notes": timing.notes + retried,
                "violations": list(bench.violations),
                "kept": sorted(getattr(bench, "kept", {})),
                "pool_size": len(getattr(bench, "pool", [])),
                "graph_fresh": fresh_copies,
            }
            if msg.get("reval") is not None and reval is None:
                with span("w.revalidate"):
                    reval = self._revalidate_with_room(idx, bench, msg["reval"], retried)
            if reval is not None:
                reply["violations"] += reval.pop("violations")
                reply.update(reval)
            reply["violations"] += _CHECK(self.sentinel)
            reply["spans"] = spans_snapshot()  # advisory, as in `run`
            return reply
        except LayoutChanged as exc:  # a graph's fixed buffers met a set of other shapes: the parent
            # confirms it with its own draws and times the workload as a seed-shaped one (modes.py)
            return {"layout_changed": {"seed": exc.seed, "message": str(exc)}}
        except BaseException as exc:
            return {"error": _failure(exc)}

    def _revalidate_with_room(
        self, idx: int, bench: Bench, reval: list[Any], said: list[str]
    ) -> dict[str, Any]:
        """`_revalidate`, once more after the device ran out of memory (`with_room`), as a timing loop
        is: an uncapturable call allocates its outputs as it runs, beside whatever the cache holds in
        fragments (025 MoE backward on the H200, round 25: 16 GiB of them when its 8 GiB gradient did not
        fit). The retry alone did not save 025: the parent held the re-validation's 24 GiB of expected
        gradients beside it (round 26; memory.kept_aside)."""
        seed, scale = int(reval[0]), float(reval[1])
        step = lambda: self._revalidate(idx, bench, seed, scale)  # noqa: E731
        return with_room(step, self.benches, self.device, bench, said, keep_outputs=True)

    def _measure(self, bench: Bench, said: list[str] | None = None) -> Any:
        """`bench.measure()`, with room made if the device runs out of memory (`with_room`)."""
        return with_room(bench.measure, self.benches, self.device, bench, said)

    def park(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Large benches parked and cached memory handed back, before the parent computes a reference of
        its own: an idle worker kept the last workload's bench (an MoE backward's: 105 GiB on the H200,
        round 19) and the parent's reference then ran out of memory beside it."""
        try:
            held = sum(b.resident_bytes for b in self.benches.values())
            park_large(self.device)  # (with its own release when it parked something)
            # cached memory back only where it is large: a release is a full collection (~0.1 s), and one
            # per workload was 1.5 s of a 16-workload problem's 8 s on the H200 (round 20)
            release_cached(self.device)
            return {"parked": held - sum(b.resident_bytes for b in self.benches.values())}
        except BaseException as exc:
            return {"error": _failure(exc)}

    def _bench(self, idx: int, msg: dict[str, Any]) -> None:
        """Workload `idx`'s bench, made on its first timing round (from the parent's bench seed)."""
        if idx in self.benches:
            return
        wl, seed = self.op.workloads[idx], int(msg["bench_seed"])
        park_large(self.device)  # no large bench of another workload beside this one (memory.py)
        first = self.factory.make(wl, seed, 1.0)
        self.benches[idx] = Bench(
            self.runner(idx),
            first,
            self.device,
            int(msg.get("l2_bytes", 0)),
            regenerate=lambda: self.factory.make(wl, seed, 1.0),
            mutated=self.contract["mutated"],  # an empty result needs no kernel (judge_capture)
            compared=self.contract["compared"],  # kept with each timed call's outputs (spotcheck.py)
        )

    def _fresh_inputs(self, idx: int, bench: Bench, msg: dict[str, Any]) -> int:
        """The round's fresh inputs for its timed calls (spotcheck.py); the graph copies refreshed."""
        if msg.get("pool_seed") is not None and bench.graph is None:
            self._fresh_pool(idx, bench, int(msg["pool_seed"]), msg.get("generation_s"))
        if msg.get("pool_seed") is not None and bench.graph is not None:
            return self._fresh_graph_copies(idx, bench, int(msg["pool_seed"]))
        return 0

    def steps(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Host timing driven by the parent, which reads this process's CPU time around each step itself
        (hostclock.py), over the channel's pipes as 16-byte frames: "prepare" (keep call i-1's outputs,
        then the untimed perturbation of call i), "noop" (the step's own cost), "call" (call i alone;
        this process's own reading of it is only cross-checked), "finish" (keep the last outputs, then
        the closing message: `time_end`)."""
        try:
            bench = self.benches[int(msg["wl"])]
        except BaseException as exc:
            return {"error": _failure(exc)}
        rfd, wfd = self.chan.rfd, self.chan.wfd
        while True:
            raw = read_exact(rfd, STEP.size, None)
            if not raw:
                raise ChannelClosed("the parent closed the step wire")
            op, i = STEP.unpack(raw)
            own = 0.0
            try:
                if op != NOOP and op != CALL and i > 0 and getattr(bench, "pool", None):
                    bench.keep(i - 1)
                if op == FINISH:
                    return self.time_end(msg)
                if op == PREPARE:
                    bench.prepare_timed_call(i)
                elif op == CALL:
                    t0 = time.process_time_ns()
                    bench.call(i % len(bench.copies))
                    own = (time.process_time_ns() - t0) / 1e3
            except BaseException as exc:
                os.write(wfd, ANSWER.pack(FAILED, 0.0))
                return {"error": _failure(exc)}
            os.write(wfd, ANSWER.pack(OK, own))

    def time_end(self, msg: dict[str, Any]) -> dict[str, Any]:
        """After parent-timed host steps: the re-validation if it was drawn to come last, the checks."""
        idx = int(msg["wl"])
        try:
            bench = self.benches[idx]
            reply: dict[str, Any] = {
                "violations": list(bench.violations),
                "kept": sorted(getattr(bench, "kept", {})),
                "pool_size": len(getattr(bench, "pool", [])),
            }
            reval = self.pending_reval.pop(idx, None)  # done before the steps, or [seed, scale] to do now
            if isinstance(reval, list | tuple):
                reval = self._revalidate(idx, bench, int(reval[0]), float(reval[1]))
            if reval is not None:
                reply["violations"] += reval.pop("violations")
                reply.update(reval)
            reply["violations"] += _CHECK(self.sentinel)
            return reply
        except BaseException as exc:
            return {"error": _failure(exc)}

    def _fresh_pool(self, idx: int, bench: Bench, pool_seed: int, generation_s: float | None = None) -> None:
        """One fresh input set per eagerly timed call (issue 13, class 1), within a memory budget and the
        time the operator's generator takes (`generation_s`, the parent's measure)."""
        wl = self.op.workloads[idx]
        nbytes = bench.nbytes  # (also when the bench is parked: its copies are gone then)
        sets = fresh_sets(nbytes, spare_bytes(self.device), self.device.type, generation_s)  # memory.py
        if not sets:  # too large for fresh sets: the perturbation stays (bench.py), and nothing
            bench.use_pool([])  # of an earlier round's sets (the parent derives none now)
            return
        # drawn when a timed call needs it (untimed), one set alive at a time (issue 9, class 2)
        # a random operator's host-timed calls are seeded like the parent's reference on their set
        stochastic = self.contract.get("stochastic") and self.device.type == "cpu"
        bench.use_pool(
            FreshSets(sets, lambda j: self.factory.make(wl, timed_seed(pool_seed, j), 1.0)),
            rng_seed=(lambda j: timed_seed(pool_seed, j)) if stochastic else None,
        )

    def _fresh_graph_copies(self, idx: int, bench: Bench, pool_seed: int) -> int:
        """Fresh values into every rotated copy of a captured graph before it is timed (issue 13, class 1):
        copy k gets the timed set `timed_seed(pool_seed, k)`, so no copy repeats another (a graph whose
        calls on copies 1.. only copy copy 0's answer passed re-validation, which writes one set into
        both copies it checks), and the parent can regenerate any copy's inputs to verify its outputs
        after the timing (spotcheck.py). One set alive at a time; tensors only (a Python scalar is
        captured in the graph: it stays the bench's). The number of copies written."""
        wl = self.op.workloads[idx]
        for k in range(len(bench.copies)):
            seed = timed_seed(pool_seed, k)
            bench.write_inputs(k, self.factory.make(wl, seed, 1.0), seed)
        self.sync()
        return len(bench.copies)

    def timed_outputs(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The kept outputs of the timed calls the parent chose after the fact; with "copies", the
        outputs a timed graph left in those rotated copies; with "burst", the last burst's calls'."""
        try:
            if msg.get("copies"):
                bench = self.benches[int(msg["wl"])]
                found = [[_sendable(o) for o in bench.outputs_of(int(k))] for k in msg["samples"]]
                copied = [[clone_like(o) if type(o) is torch.Tensor else o for o in c] for c in found]
                return {"outputs": copied}
            bench = self.benches[int(msg["wl"])]
            kept = bench.burst_kept if msg.get("burst") else bench.kept
            return {"outputs": [kept.get(int(i)) for i in msg["samples"]]}
        except BaseException as exc:
            return {"error": _failure(exc)}

    def burst_inputs(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Fresh input sets for the next eager burst, one per call, from the parent's salt (untimed: the
        parent times only the burst): `{"sets": reps}`, or `{"sets": 0}` where they do not fit in memory
        or the timed invocation is a CUDA graph (a replay reads its captured buffers)."""
        try:
            idx = int(msg["wl"])
            bench, reps, salt = self.benches[idx], max(1, int(msg["reps"])), int(msg["salt"])
            bench.stage_burst([])  # the last burst's sets and outputs go first
            if bench.graph is not None or not burst_sets_fit(
                bench.set_bytes(), reps, spare_bytes(self.device)
            ):
                return {"sets": 0}
            wl, sets, held = self.op.workloads[idx], [], 0
            outputs = bench.set_bytes() - value_bytes(bench.copies[0])  # what each call's outputs keep
            budget = min(BURST_BYTES, spare_bytes(self.device) // 2)  # burst_sets_fit, on the sets drawn:
            for j in range(reps):  # a generator whose sizes follow the seed may draw larger ones
                sets.append(self.factory.make(wl, timed_seed(salt, j), 1.0))
                held += value_bytes(sets[-1]) + outputs
                if held > budget:
                    return {"sets": 0}
            bench.stage_burst(sets)
            self.sync()
            return {"sets": reps}
        except BaseException as exc:
            return {"error": _failure(exc)}

    def burst(self, msg: dict[str, Any]) -> dict[str, Any]:
        """More runs of the timed invocation; the parent times this request with its own clock."""
        try:
            reps, part, salt = max(1, int(msg["reps"])), str(msg.get("part", "all")), int(msg.get("salt", 0))
            self.benches[int(msg["wl"])].burst(reps, part, salt)
            return {}
        except BaseException as exc:
            return {"error": _failure(exc)}

    def _revalidate(self, idx: int, bench: Bench, seed: int, scale: float) -> dict[str, Any]:
        """Fresh values into the captured buffers, poisoned outputs, replay, hand the outputs back.

        In a CUDA graph, copy 0 is checked too: it is the copy the candidate was called on before the
        capture (the time estimate), so a cache keyed on its pointers skips exactly that copy inside the
        graph (seen on the H200: a data_ptr cache passed when only the last copy was re-validated)."""
        k = bench.last
        extra = [0] if bench.graph is not None and k != 0 else []
        fresh = self.factory.make(self.op.workloads[idx], seed, scale)
        for j, buf in enumerate(bench.copies[k]):  # Python scalars: a graph keeps its captured ones
            if not isinstance(buf, torch.Tensor):
                for c in (k, *extra):
                    if bench.graph is None:
                        bench.copies[c][j] = fresh[j]  # an eager call takes the fresh ones
                fresh[j] = bench.copies[k][j]
        for c in (k, *extra):
            if bench.fits_another_layout(c, fresh):  # a generator whose shapes change on rare seeds
                bench.take_set(c, clone_values(fresh))  # (a clone: `fresh` is what mutation is checked by)
            else:
                bench.write_inputs(c, fresh, seed)  # through each compact base (expanded inputs)
            bench.poison_outputs(c)
        drawn, scalars = digest(fresh), [None if isinstance(v, torch.Tensor) else v for v in fresh]
        # what the call may not change: the fresh set itself where small, else its fingerprints (the set is
        # let go before the call, as correctness lets its sets go: one large set at a time)
        large = value_bytes(fresh) > SMALL_BYTES
        originals = InputSnapshot(fresh, exact=False) if large else InputSnapshot.untouched(fresh)
        del fresh
        result = bench.replay(k)
        changed = {i for c in (k, *extra) for i in originals.changed(bench.copies[c])}
        changed -= set(self.contract["mutated"])
        violations = [f"input {i} was modified during the timed invocation" for i in sorted(changed)]

        def sendable(outputs: list[Any]) -> list[Any]:
            return [clone_like(r.detach()) if type(r) is torch.Tensor else _sendable(r) for r in outputs]

        reply = {
            "reval_outputs": sendable(result),
            "reval_more": [sendable(bench.outputs_of(c)) for c in extra],
            "reval_digest": drawn,
            "reval_copies": [k, *extra],  # these no longer hold the timed values (spotcheck.py)
            "reval_scalars": scalars,
            "violations": list(dict.fromkeys(violations)),
        }
        # the fresh set's freed blocks handed back where the device is short: the parent judges these
        # outputs next (025 MoE backward: 16 GiB of this process's cache left the parent 2 GiB, round 26)
        release_cached(self.device)
        return reply


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: the worker (and its GPU memory) never outlives the trusted parent."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


# The cyclic collector runs only where the worker runs it: at the top of each request (before the request
# touches a buffer), before each correctness seed's inputs are drawn and each timed call's are written
# (bench.Bench._look_for_modes: a call's garbage is freed call by call), and where memory.release frees a
# large workload. Left to its thresholds it runs at any allocation, inside the harness's untimed steps too,
# and with it the finalizers of the kernel's garbage: a generator suspended in `try: yield ... finally:`
# runs its `finally` block when collected, and red team round 12 ran the kernel's code there between the
# write of fresh inputs and the call that reads them (contextlib's own idiom, which no source rule can
# refuse). Each request collects the youngest generation;
# every tenth the next, every hundredth all (CPython's own ratios, counted in requests).
COLLECT_EVERY = (100, 10)


def collect_between_requests(served: int) -> int:
    """The generation collected before request number `served` (1-based), after collecting it."""
    generation = 2 if served % COLLECT_EVERY[0] == 0 else 1 if served % COLLECT_EVERY[1] == 0 else 0
    collect_here(generation)
    return generation


def prepare_host_process() -> None:
    """A worker that times on the host: the Triton interpreter; one intra-op thread (host timing of
    multi-threaded CPU ops swings with thread wake-ups on a busy host, which the parent's burst check,
    plausibility.py, would misread as a faked report); glibc's malloc keeping what a call frees for the
    next, as the parent's does (timing.steady_host_allocator)."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    start_intra_op_pool()
    steady_host_allocator()


def start_intra_op_pool() -> None:
    """torch's intra-op threads for every core this process may use, started now, then one thread used.
    The parent counts the worker's OS threads before the kernel loads and calls any thread started later
    work beside the timed call; a kernel's honest `torch.set_num_threads(2)` started a pool thread at its
    first large op and was judged REWARD_HACK (red team round 23, h05). Started here, the pool is part of
    the count; a thread pool of the kernel's own (a Python thread, torch's inter-op pool) still is not."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    torch.set_num_threads(max(1, cores))
    torch.ones(1 << 20).sum()  # past ATen's grain size: the pool's threads are made
    torch.set_num_threads(1)


def worker_main(
    op_dir: str, kernel_dir: str, device: str, rfd: int, wfd: int, bulk_fd: int | None = None
) -> int:
    keep_collector_off()  # each collection point switches it off again (memory.collect_here)
    _die_with_parent()
    os.dup2(2, 1)  # candidate prints go to the log, never into the protocol
    sys.stdout = sys.stderr
    region = Region(bulk_fd) if bulk_fd is not None and sealed(bulk_fd) else None
    chan = Channel(rfd, wfd, region=region)
    if device == "auto":  # resolved as the parent resolves it; the parent checks the answer
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # before triton is imported and before the sentinel's snapshot
        prepare_host_process()
    dev = torch.device(device)
    try:
        worker = Worker(Path(op_dir), Path(kernel_dir), dev)
        worker.chan = chan  # host timing's step wire runs over its pipes (hostclock.py)
    except BaseException as exc:
        chan.send({"error": {"status": "INFRA_ERROR", "message": f"worker setup failed: {exc}"}})
        return 1
    started = process_start()
    TIMELINE.update({"ready": time.perf_counter(), **({"process_start": started} if started else {})})
    # the parent maps this to learn whether large outputs may cross on the device (protocol.py)
    probe = chan.offer_probe() if dev.type == "cuda" else None
    chan.send({"ready": True, "device": dev.type, "timeline": TIMELINE, "share_probe": probe})
    handlers = {
        "load": worker.load,
        "run": worker.run,
        "time": worker.time,
        "burst": worker.burst,
        "burst_inputs": worker.burst_inputs,
        "timed_outputs": worker.timed_outputs,
        "steps": worker.steps,
        "time_end": worker.time_end,
        "ping": lambda msg: {},
        "park": worker.park,
    }
    served = 0
    while True:
        try:
            msg = chan.recv()
        except ChannelClosed:
            return 0
        if msg.get("cmd") == "exit":
            return 0
        served += 1
        collect_between_requests(served)  # the kernel's finalizers run here, never inside a step
        if "wl" in msg:  # the parent numbers workloads as in the whole operator, the view only its own
            msg["wl"] = worker.local.get(int(msg["wl"]))  # None (an error reply) for any other
        chan.send(handlers[msg["cmd"]](msg))
        if msg["cmd"] == "run":  # the parent computes the next seed's reference now: the freed memory back
            release_cached(dev)  # (never after a timing step: the parent's burst would time re-allocations)
