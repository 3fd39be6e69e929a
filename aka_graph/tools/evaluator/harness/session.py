"""The trusted parent's view of one evaluation: operator, device, seeds, reference, and one
`KernelState` per candidate (its untrusted worker and per-workload verdicts)."""

from __future__ import annotations

import hashlib
import os
import platform
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import hostmem
from .bench import call_has_no_work
from .blobs import missing_blobs
from .cpu_budget import CPU_BUDGET_S, JUDGED_CALLS, CpuWorkload, HostTooSlow, refusal
from .gpu_specs import GpuSpec, load_table, lookup
from .hostclock import ClockPairs
from .inputs import FP4X2, declared_bytes, dtype_of, fp4x2_values
from .isolate import memory_limit_bytes
from .layout import value_bytes
from .loading import load_operator
from .memory import (
    LARGE_WORKLOAD_BYTES,
    HostTooSmall,
    generator_seeds,
    host_shortfall,
    one_seed_at_a_time,
    output_bytes,
    place_library_workspaces,
    release,
    release_cached,
    spare_bytes,
)
from .neartie import (
    BUDGET_S,
    MATCHED_BEFORE_TIES,
    MAX_DIRECTIONS,
    STABLE_CYCLES,
    STALL_CYCLES,
    line_width,
    nudge_size,
    nudged,
    part_of,
    parts,
)
from .numerics import Verdict, check_output
from .opmodel import Operator, OperatorError
from .policy import scan_kernel_dir
from .protocol import ChannelTimeout, ProtocolError
from .runner import digest
from .selections import same_selection
from .spans import span
from .speed_of_light import SolBound, bound, call_bytes, dtype_class
from .subset import has_empty_tensor, representative, workload_elements
from .timing import TimedSets, steady_host_allocator
from .trusted import Reference
from .worker_proc import WorkerDied, WorkerProcess

PREPARED_BYTES = 4 << 30  # reference outputs a waiting long-lived parent keeps ready (prepare_references)


def _seeds_bytes(outs: list[list[Any]]) -> int:
    """Bytes of one workload's reference outputs, over all its seeds."""
    return sum(value_bytes(o) for o in outs)


def fresh_seed() -> int:
    """Unguessable by the candidate: drawn from os.urandom, never derived from time or a counter."""
    return int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF


def kernel_sha256(kernel_dir: Path) -> str:
    files = sorted(p for p in kernel_dir.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    if [p.name for p in files] == ["kernel.py"]:
        return hashlib.sha256(files[0].read_bytes()).hexdigest()
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(kernel_dir).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass
class Settings:
    op_dir: Path
    seeds: int = 3
    shape_ids: list[str] | None = None
    device: str = "auto"
    call_timeout: float | None = None
    compile_timeout: float = 300.0
    gpu_spec: str | None = None
    peak_table: Path | None = None
    scale: float = 2.0
    source_policy: bool = True  # False only to test the in-worker checks on their own
    private_shapes: bool = False  # production mode: no message may carry shapes back to the agent
    all_workloads: bool = False  # on CPU: every workload, not the representative subset (subset.py)
    cpu_budget_s: float = CPU_BUDGET_S  # on CPU, the default subset's time limit (cpu_budget.py; 0: none)
    blob_root: Path | None = None  # where safetensors inputs' relative paths resolve


def device_info(device: torch.device) -> dict[str, Any]:
    if device.type != "cuda":
        return {"name": platform.processor() or platform.machine() or "cpu", "arch": "cpu"}
    props = torch.cuda.get_device_properties(device)
    arch = getattr(props, "gcnArchName", "") or f"sm_{props.major}{props.minor}"
    if torch.version.hip is None:
        arch = f"sm_{props.major}{props.minor}"
    clock = getattr(props, "clock_rate", None)
    mem_clock = getattr(props, "memory_clock_rate", None)
    return {
        "name": props.name,
        "arch": arch,
        "sm_clock_mhz": clock / 1000 if clock else None,
        "mem_clock_mhz": mem_clock / 1000 if mem_clock else None,
    }


@dataclass
class WorkloadVerdict:
    status: str = "PASS"
    message: str = ""
    max_abs: float | None = None
    max_rel: float | None = None
    latencies: list[float] = field(default_factory=list)
    spread: float | None = None
    method: str | None = None
    kernels_per_call: float | None = None
    revalidated: bool = False
    near_ties: int = 0  # elements judged against the reference on nudged inputs (neartie.py)

    def fail(self, status: str, message: str) -> None:
        if self.status == "PASS":
            self.status, self.message = status, message


class KernelState:
    def __init__(
        self, label: str, kernel_dir: Path, session: Session, worker: WorkerProcess | None = None
    ) -> None:
        """`worker`: one spawned early (before the parent imported torch), else one is spawned here."""
        self.label, self.kernel_dir = label, Path(kernel_dir)
        self.sha256 = kernel_sha256(self.kernel_dir) if self.kernel_dir.is_dir() else ""
        self.verdicts: dict[int, WorkloadVerdict] = {i: WorkloadVerdict() for i in session.indices}
        self.error: tuple[str, str] | None = None  # a failure before any workload (compile, startup)
        self.alive = True
        self.worker: WorkerProcess | None = None
        self.round_trip: tuple[int, int | None] | None = None  # an empty request's cost (plausibility.py)
        self.worker_spans: dict[str, dict[str, float]] = {}  # its own account of its time (spans.py)
        self.seeds_checked: dict[int, int] = {}  # correctness seeds per workload (memory.generator_seeds)
        # the fresh sets each kept timing round ran on (timing.TimedSets); where the operator's generator
        # draws them, the reference is timed on the same sets (refcache.reference_timings)
        self.timed_sets: dict[int, list[TimedSets]] = {}
        # the generator's time sent with each workload's last timing round: the fresh sets it allows are
        # what the parent holds the worker to (spotcheck.pool_shortfall), whatever later draws measure
        self.generation_sent: dict[int, float | None] = {}
        banned = scan_kernel_dir(self.kernel_dir) if session.settings.source_policy else []
        if banned:  # the checks inside the worker could be switched off: no call is made at all
            if worker is not None:  # it never got the load command: the kernel was never imported
                worker.close()
            self.stop(
                "REWARD_HACK",
                "the kernel source reaches into the interpreter or patches global "
                "state, which kernels must not do: " + "; ".join(banned[:10]),
            )
            return
        self.worker = worker or WorkerProcess(
            session.op.directory, self.kernel_dir, session.device.type, session.op.blob_root
        )
        self.worker.attach(str(session.device))
        # on a host, the worker's OS threads before the kernel is loaded (taken with the first request): one
        # the kernel starts later is work beside the timed call (see `request`). Host timing only: there the
        # worker runs on one thread, BLAS and OpenMP included; a GPU runtime starts threads of its own.
        self.counts_threads = session.device.type == "cpu"
        self.host_threads: set[tuple[int, int]] | None = None
        # the POSIX timers the worker holds before the kernel is loaded (taken with the first request, on
        # every device): one armed later runs a handler of the kernel's between the harness's steps
        self.timers_before: set[tuple[int, int]] | None = None
        self.reply_ns = 0  # the last request's round trip, without the checks that follow its reply
        self.clock_pairs: dict[int, ClockPairs] = {}  # host timing's pairs per workload, every round's

    @property
    def passed(self) -> bool:
        return self.error is None and all(v.status == "PASS" for v in self.verdicts.values())

    def stop(self, status: str, message: str) -> None:
        self.alive = False
        if self.error is None:
            self.error = (status, message)

    def request(self, msg: dict[str, Any] | None, timeout_s: float) -> dict[str, Any] | None:
        """One request under the watchdog; None when the worker had to be stopped (recorded)."""
        if self.worker is None:
            return None
        if self.timers_before is None:
            first = self.worker.own_pids()
            self.timers_before = self.worker.timers(first)
            if self.counts_threads:
                self.host_threads = self.worker.os_threads(first)
        try:
            sent = time.perf_counter_ns()
            reply = self.worker.request(msg, timeout_s)
            self.reply_ns = time.perf_counter_ns() - sent  # the worker's part (plausibility.py's clock)
        except ChannelTimeout:
            self.stop("TIMEOUT", f"no answer within {timeout_s:.0f} s (per-call watchdog); worker killed")
            return None
        except WorkerDied as exc:
            self.stop("RUNTIME_ERROR", str(exc))
            return None
        except ProtocolError as exc:  # only the candidate's process writes the worker's end of the pipe
            self.worker.kill()
            self.stop(
                "REWARD_HACK",
                f"the worker's reply was malformed ({exc}): something in the kernel's process wrote to the "
                "harness's channel",
            )
            return None
        with span("request.checks"):
            return self._checked(reply)

    def _checked(self, reply: dict[str, Any]) -> dict[str, Any] | None:
        """The reply, once /proc says the kernel's process started no process, thread, timer or signal
        handler of its own (read after every reply: on a GPU worker with many descriptors, ~ms)."""
        assert self.worker is not None
        below = self.worker.below()  # read from /proc by us: the worker's word is not needed
        spawned = self.worker.spawned(below)
        if spawned:
            from .proctree import describe

            self.stop(
                "REWARD_HACK",
                f"the kernel started processes of its own ({describe(spawned)}); candidates must not "
                "fork or spawn: work in another process is work nobody times",
            )
            return None
        own = self.worker.own_pids(below)  # the same read serves the checks below
        # (a reply that names its violations keeps its own words: "threads left running: ..." and the like)
        started = 0
        if self.host_threads and not reply.get("violations"):
            started = len(self.worker.os_threads(own) - self.host_threads)
        if started:
            self.worker.kill()
            self.stop(
                "REWARD_HACK",
                f"the kernel started {started} OS thread(s) of its own (threads Python's threading module "
                "may not list): work on another thread runs between the harness's steps, where no clock "
                "looks; kernels start no threads",
            )
            return None
        # checked after every reply: a timer needs its handler (round 8: SIGALRM from Python; round 9:
        # SIGUSR2 from a C++ extension's POSIX timer, which starts no thread)
        handlers = self.worker.signal_handlers(own, self.timers_before)
        if handlers:
            self.worker.kill()
            self.stop(
                "REWARD_HACK",
                f"the kernel's process catches {', '.join(handlers)}: a signal handler (a timer's) runs code "
                "between the harness's steps, where no clock looks; kernels install no signal handlers",
            )
            return None
        return reply


class Session:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.times: dict[str, float] = {"session_start": time.perf_counter()}  # milestones (phases.py)
        self.op: Operator = load_operator(Path(settings.op_dir))
        self.times["operator_loaded"] = time.perf_counter()
        self.op.blob_root = settings.blob_root
        chosen = self.op.select(settings.shape_ids)
        self.indices = [self.op.workloads.index(w) for w in chosen]
        want = settings.device
        if want == "auto":
            want = "cuda" if torch.cuda.is_available() else "cpu"
        if want == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda requested but torch sees no CUDA device")
        self.device = torch.device("cuda:0" if want == "cuda" else "cpu")
        self.selection_note = ""  # which workloads a CPU run left out, and why
        if self.device.type == "cpu" and not settings.all_workloads and not settings.shape_ids:
            picked = representative(self.op, self.indices)
            self.indices, self.selection_note = picked.indices, picked.note
        blobs = missing_blobs(self.op, [self.op.workloads[i] for i in self.indices])
        if blobs:
            raise OperatorError(blobs)
        if self.device.type == "cpu":
            self._check_host_memory()
            steady_host_allocator()  # the reference's timed calls, as the worker's (timing.py)
        self.device_info = device_info(self.device)  # on a GPU: creates the parent's CUDA context
        if self.device.type == "cuda" and self._largest_declared_bytes() >= LARGE_WORKLOAD_BYTES:
            place_library_workspaces(self.device)  # before anything large is cached (memory.py)
        self.times["device_ready"] = time.perf_counter()
        table = load_table(settings.peak_table) if settings.peak_table else None
        self.spec: GpuSpec | None = None
        if settings.gpu_spec or self.device.type == "cuda":
            self.spec = lookup(settings.gpu_spec or self.device_info["name"], table)  # unknown -> error
        self.l2_bytes = self.spec.l2_bytes if self.spec else 0
        self.call_timeout = settings.call_timeout or (30.0 if self.device.type == "cuda" else 300.0)
        # the reference's module and a native operator's weights (drawn from the init seed, sent to the
        # worker in the load command) last as long as the session; every evaluation draws its own seeds
        self.reference = Reference(self.op, self.device, fresh_seed())
        self.times["reference_loaded"] = time.perf_counter()
        self.sol: dict[int, SolBound] = {}
        # one fresh timed set of a workload (its inputs and declared outputs), from its first reference seed
        self.set_bytes: dict[int, int] = {}
        # what the reference itself does to its inputs is the operator's contract (trusted.py), probed on
        # the smallest workload without an empty tensor: on an empty step (no new tokens) an in-place
        # update, an aliased return and random draws all look like nothing, and were then judged so
        probe = min(
            self.indices,
            key=lambda i: (
                has_empty_tensor(self.op, self.op.workloads[i]),
                workload_elements(self.op, self.op.workloads[i]),
            ),
        )
        budgeted = self.device.type == "cpu" and not settings.all_workloads and not settings.shape_ids
        self.contract = self.reference.contract(probe, self._cpu_budget(probe) if budgeted else None)
        self.times["contract_probed"] = time.perf_counter()
        self.seeds: list[tuple[int, float, int | None]] = []
        self.bench_seed = 0
        # reference outputs for the current seeds, computed before the request came (prepare_references)
        self.prepared: dict[int, tuple[list[list[Any]], list[list[float]]]] = {}
        self.seeds_used = False
        self.prepared_used = 0  # workloads of the current evaluation whose references were prepared
        # this evaluation's near-tie search (neartie.py): the seconds it may still spend, and the secret its
        # directions are drawn from with the inputs' digest (one output on one input, one verdict)
        self.near_tie_left_s, self.near_tie_secret = BUDGET_S, fresh_seed()
        self.draw_seeds()

    def _cpu_budget(self, probe: int) -> Callable[[float], None]:
        """The check of a default CPU evaluation's projected time on the probe's reference calls
        (cpu_budget.py): HostTooSlow, naming what it measured and how to go on, when it is hopeless.
        Judged on the faster of the first two calls: a first call's one-time costs (a table built and
        cached, a library's lazy set-up) are never extrapolated over the whole evaluation. Both run on
        one set; where the operator's generator may decide the work by the seed that set may be a rare
        long one (red team round 29's h02: a prefill on one seed in 64, refused at 29 s projected for an
        evaluation of 5.7 s), so a refusal there waits for a call on another seed's set."""
        calls: list[float] = []

        def sized(i: int) -> CpuWorkload:
            wl = self.op.workloads[i]
            return CpuWorkload(wl.id, workload_elements(self.op, wl))

        def check(call_s: float) -> None:
            calls.append(call_s)
            if len(calls) != JUDGED_CALLS:
                return
            chosen, budget = [sized(i) for i in self.indices], self.settings.cpu_budget_s
            why = refusal(min(calls), sized(probe), chosen, budget, len(calls))
            if why and self.reference.seed_may_shape:
                calls.append(self.reference.call_s(probe, fresh_seed()))
                why = refusal(min(calls), sized(probe), chosen, budget, len(calls))
            if why:
                raise HostTooSlow(why)

        return check

    def _largest_declared_bytes(self) -> int:
        """The largest chosen workload's declared inputs and outputs (SOL operators; 0 for others)."""
        if self.op.kind != "sol":
            return 0
        return max((declared_bytes(self.op, self.op.workloads[i]) for i in self.indices), default=0)

    def _check_host_memory(self) -> None:
        """Before anything is drawn: a CPU evaluation of a workload this host cannot hold twice stops as
        the environment's (HostTooSmall), naming the workload, the sizes and where it would run."""
        if self.op.kind != "sol":
            return
        host = hostmem.read()
        limit = memory_limit_bytes()
        for i in self.indices:
            wl = self.op.workloads[i]
            why = host_shortfall(declared_bytes(self.op, wl), host.available, limit, host.describe())
            if why:
                raise HostTooSmall(f"workload {wl.id} cannot be evaluated on this host's CPU: {why}")

    def draw_seeds(self) -> None:
        """Fresh correctness and timing seeds for the next evaluation: a long-lived parent (serve.py)
        evaluates many candidates with one session, and no candidate may meet the inputs another saw.

        `--seeds N` counts every seed, each of another kind where possible: plain random ones, one at
        another scale, and (SOL) the first seed's edges around fresh interior rows; never fewer than one
        of each kind. Native inputs come from input.py: no scaling or mixing applies there."""
        settings = self.settings
        extras = 2 if self.op.kind == "sol" else 1
        base = [(fresh_seed(), 1.0, None) for _ in range(max(1, settings.seeds - extras))]
        self.seeds = [*base, (fresh_seed(), settings.scale, None)]
        if self.op.kind == "sol":
            self.seeds.append((base[0][0], 1.0, fresh_seed()))
        self.bench_seed = fresh_seed()
        self.prepared.clear()
        self.seeds_used = False

    def take_seeds(self) -> None:
        """Seeds for the evaluation about to start: the ones drawn (and perhaps prepared for) while no
        evaluation had used them yet, else fresh ones. No two evaluations ever share seeds."""
        if self.seeds_used:
            self.draw_seeds()
        self.seeds_used = True
        self.prepared_used = 0
        self.near_tie_left_s, self.near_tie_secret = BUDGET_S, fresh_seed()  # this evaluation's

    def prepare_references(self, interrupted: Callable[[], bool] = lambda: False) -> None:
        """The reference outputs of the next evaluation's seeds, computed while a long-lived parent
        (serve.py) waits for its request, so the request does not wait for them (a campaign's agent
        takes minutes between candidates; the references took ~0.6 s of a 3 s evaluation). Kept on the
        device within PREPARED_BYTES and an eighth of what is free; the workloads beyond that, or left
        when `interrupted()` says a request came, are computed when judged, as in a cold evaluation.
        The seeds are drawn before any candidate is known, and the outputs never leave this process."""
        budget = PREPARED_BYTES
        if self.device.type == "cuda":
            budget = min(budget, spare_bytes(self.device) // 8)
        budget -= sum(_seeds_bytes(outs) for outs, _ in self.prepared.values())
        for idx in self.indices:
            if idx in self.prepared or len(self.seed_groups(idx)) > 1:  # large: computed seed by seed
                continue
            if interrupted():
                break
            outs, digests = self._reference_outputs(idx)
            size = _seeds_bytes(outs)
            if size > budget:
                del outs
                release(self.device, freed=size)
                break
            budget -= size
            self.prepared[idx] = (outs, digests)

    def workload_id(self, idx: int) -> str:
        return self.op.workloads[idx].id

    def seed_groups(self, idx: int, which: list[int] | None = None) -> list[list[int]]:
        """The seeds of workload `idx` (`which` of them; all by default) as correctness runs them: all at
        once, or one at a time where their sets together are large (memory.one_seed_at_a_time: then the
        parent's reference comes first)."""
        wl = self.op.workloads[idx]
        per_seed = self.set_bytes.get(idx) or (declared_bytes(self.op, wl) if self.op.kind == "sol" else 0)
        every = list(range(len(self.seeds))) if which is None else list(which)
        if not every:
            return []
        return [[n] for n in every] if one_seed_at_a_time(per_seed, len(every)) else [every]

    @property
    def own_generator(self) -> bool:
        """Whether inputs come from the operator's own code (a custom entry point, a native input.py),
        which may take seconds a draw; the harness's own random draws take milliseconds a gigabyte."""
        return bool(self.op.custom_inputs_entrypoint) or self.op.kind == "native"

    @property
    def draws_apart(self) -> bool:
        """Whether the parent draws a correctness seed's inputs (and computes its reference) before the
        workers are sent it, not beside them: where the operator's own code draws them on a GPU. Such a
        generator may write a tensor element by element, each write a small copy the GPU serves one
        process's time slice at a time: 034 vision-language cross attention drew a set in ~0.3 s alone
        and in ~4 s with both processes drawing at once (round 21 on the H200: 87 s of correctness)."""
        return self.own_generator and self.device.type == "cuda"

    def generation_unknown(self, idx: int) -> bool:
        """Whether workload `idx`'s inputs come from the operator's own code and the parent has not timed
        a draw of them yet."""
        return self.own_generator and idx not in self.reference.generation_s and idx not in self.prepared

    def correctness_seeds(self, idx: int) -> int:
        """How many of this evaluation's seeds workload `idx` is checked on (memory.generator_seeds, for
        the operator's own generator): the first ones, so a slow generator's workload keeps the plain
        random seed."""
        if not self.own_generator:
            return len(self.seeds)
        return generator_seeds(self.reference.generation_s.get(idx), len(self.seeds))

    def reference_outputs(
        self, idx: int, which: list[int] | None = None
    ) -> tuple[list[list[Any]], list[list[float]]]:
        """Workload `idx`'s reference outputs and input digests for this evaluation's seeds (`which` of
        them, in that order; all by default)."""
        if idx in self.prepared:  # (a workload with prepared references is checked in one group)
            self.prepared_used += 1
            outs, digests = self.prepared.pop(idx)
            chosen = range(len(self.seeds)) if which is None else which
            return [outs[n] for n in chosen], [digests[n] for n in chosen]
        return self._reference_outputs(idx, which)

    def _reference_outputs(
        self, idx: int, which: list[int] | None = None
    ) -> tuple[list[list[Any]], list[list[float]]]:
        outs, digests, freed = [], [], 0
        # the workload's speed-of-light bound, once per session: a long-lived parent (serve.py) counts
        # the reference's FLOPs (a traced call, the slowest of the parent's steps) on its first evaluation
        bound_it = self.spec is not None and idx not in self.sol
        for n in range(len(self.seeds)) if which is None else which:
            seed, scale, mix = self.seeds[n]
            inputs = self.reference.inputs(idx, seed, scale, mix)
            digests.append(digest(inputs))
            if n == 0:
                # what one fresh timed set holds in the worker: its inputs and the kept outputs of its call
                # (the worker's Bench.nbytes; spotcheck.pool_shortfall holds the worker to the same count)
                self.set_bytes[idx] = value_bytes(inputs) + output_bytes(self.reference.runner(idx).out_specs)
            result, flops = self.reference.outputs(
                idx, inputs, count_flops=n == 0 and bound_it, rng_seed=seed
            )  # seeded as the candidate's call on this seed (a reference that draws random numbers)
            idle = n == 0 and bound_it and call_has_no_work(list(result), inputs, self.contract["mutated"])
            result = [*result, *(inputs[i] for i in self.contract["compared"])]  # inputs updated in place
            outs.append(result)
            if n == 0 and bound_it:
                # a call with no work (an empty serving step: its KV cache is compared, never written)
                # moves nothing, and its empty graph replays in nanoseconds (seen under the cache's bound)
                moved, written = (0, 0) if idle else call_bytes(inputs, result, self.contract["mutated"])
                self.sol[idx] = bound(self.spec, moved, flops or 0, dtype_class(inputs), written)
            freed += value_bytes(inputs)
            del inputs, result  # freed before the next seed's are drawn (memory.py)
        release(self.device, freed=freed)  # the worker, evaluating this workload now, sees it as free
        return outs, digests

    def output_name(self, j: int) -> str:
        """Output j's name; past the declared outputs, the inputs the reference updates in place."""
        n_out = len(self.op.outputs)
        extra = self.contract["compared"]
        if j >= n_out and j - n_out < len(extra) and extra[j - n_out] < len(self.op.inputs):
            return f"input {self.op.inputs[extra[j - n_out]].name} (updated in place)"
        return self.op.outputs[j].name if j < n_out else f"output{j}"

    def _as_tensor(self, value: Any, j: int) -> Any:
        """A Python scalar output (`shape: null`) as a 0-d tensor of its declared dtype (as SOL does)."""
        if type(value) not in (int, float, bool) or j >= len(self.op.outputs):
            return value
        return torch.tensor(value, dtype=dtype_of(self.op.outputs[j].dtype), device=self.device)

    def judge_outputs(
        self,
        verdict: WorkloadVerdict,
        got: list[Any],
        want: list[Any],
        idx: int,
        what: str,
        untouched: Collection[int] = (),
        inputs: Callable[[], list[Any]] | None = None,
        rng_seed: int | None = None,
    ) -> bool:
        """Each output against the reference's (and each input the reference updates in place against the
        reference's update); `untouched`: those inputs the kernel left as they were, said in the message
        (SOL compares outputs only: a user coming from it should learn why that is not enough here).
        `inputs`: the call's inputs drawn again (as they were before the reference ran, `rng_seed` its
        generators' seed): an output wrong on its values is judged again where the reference itself is
        unstable, against the reference on nudged inputs (neartie.py). The comparison's temporaries are
        handed back to the driver when large (memory.release_cached): the worker needs them next."""
        try:
            return self._judge_outputs(verdict, got, want, idx, what, untouched, inputs, rng_seed)
        finally:
            release_cached(self.device)

    def _judge_outputs(
        self,
        verdict: WorkloadVerdict,
        got: list[Any],
        want: list[Any],
        idx: int,
        what: str,
        untouched: Collection[int],
        inputs: Callable[[], list[Any]] | None,
        rng_seed: int | None,
    ) -> bool:
        tol = self.op.workloads[idx].tolerance
        if len(got) != len(want):
            verdict.fail("INCORRECT", f"{what}: {len(got)} outputs, expected {len(want)}")
            return False
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            name = self.output_name(j)
            pair = self._comparable(g, w, j)
            if isinstance(pair, str):
                verdict.fail("INCORRECT", f"{what}: {name}: {pair}")
                return False
            v = check_output(name, *pair, tol, on=self.device)
            if not v.ok and v.numeric and inputs is not None and not pair[1].dtype.is_floating_point:
                ties = same_selection(*pair, inputs())  # indices among equal values (selections.py)
                if ties is not None:
                    v = Verdict(ok=True, max_abs=None, max_rel=None, near_ties=ties)
                    verdict.near_ties += ties
            if not v.ok and v.numeric and v.matched >= MATCHED_BEFORE_TIES and inputs is not None:
                with span("correctness.near_ties"):
                    v = self._near_tie_verdict(name, pair, j, idx, inputs, rng_seed) or v
                verdict.near_ties += v.near_ties
            if v.max_abs is not None:
                verdict.max_abs = max(verdict.max_abs or 0.0, v.max_abs)
                verdict.max_rel = max(verdict.max_rel or 0.0, v.max_rel or 0.0)
            if not v.ok:
                extra = self.contract["compared"]
                n_out = len(self.op.outputs)
                if j >= n_out and j - n_out < len(extra) and extra[j - n_out] in untouched:
                    v.message += (
                        " (the kernel left this input unchanged: the reference updates it in place, so the "
                        "update is part of the operator's contract, as a KV-cache write is)"
                    )
                verdict.fail("INCORRECT", f"{what}: {v.message}")
                return False
        return True

    def _comparable(self, g: Any, w: Any, j: int) -> tuple[torch.Tensor, torch.Tensor] | str:
        """Output j of the kernel and of the reference as tensors the rule compares, or why they are not."""
        g, w = self._as_tensor(g, j), self._as_tensor(w, j)
        if not isinstance(g, torch.Tensor) or not isinstance(w, torch.Tensor):
            return "is not a tensor"
        if g.dtype != w.dtype and FP4X2 in (g.dtype, w.dtype):  # packed fp4 is compared by value
            return f"dtype {g.dtype} != expected {w.dtype}"
        return self._by_value(g), self._by_value(w)

    @staticmethod
    def _by_value(t: torch.Tensor) -> torch.Tensor:
        """Packed fp4 as the values it holds (compared by value); any other tensor as it is."""
        return fp4x2_values(t) if t.dtype == FP4X2 else t

    def _near_tie_verdict(
        self,
        name: str,
        pair: tuple[torch.Tensor, torch.Tensor],
        j: int,
        idx: int,
        inputs: Callable[[], list[Any]],
        rng_seed: int | None,
    ) -> Verdict | None:
        """Output j judged again against the reference's output j on inputs nudged both ways along fresh
        random directions (two reference calls each, only on a failure), until it passes, STALL_CYCLES
        cycles in a row explain nothing more, STABLE_CYCLES cycles move nothing at all, or the
        evaluation's near-tie budget is spent (neartie.py); None where the reference cannot be run
        again (the first verdict stands). Each direction's verdict folds the earlier ones (`prior`:
        numerics.nearest_reference), so one verdict is kept between directions."""
        tol = self.op.workloads[idx].tolerance
        first = inputs()
        count, width = parts(first), line_width(pair[1], first)
        if not count:  # nothing to nudge (integer inputs, whole numbers alone)
            return None
        # the same directions for the same output on the same inputs: a timed call and an untimed one that
        # answer alike get one verdict (spotcheck.labelled compares them), never two draws' luck
        start = hash((self.near_tie_secret, j, *digest(first))) & 0x7FFF_FFFF_FFFF
        del first
        verdict, stalled, unstable = None, 0, False
        for k in range(MAX_DIRECTIONS):
            if self.near_tie_left_s <= 0:
                if verdict is not None:
                    verdict.message += (
                        f" (the near-tie search stopped: its {BUDGET_S:g} s of this evaluation are spent)"
                    )
                return verdict
            began = time.monotonic()
            part = part_of(k, count)
            both = [
                self._nudged_output(j, idx, inputs, (start + k, sign, part), rng_seed) for sign in (1, -1)
            ]
            self.near_tie_left_s -= time.monotonic() - began
            if both[0] is None or both[1] is None:
                return verdict
            again = check_output(name, *pair, tol, [(both[0], both[1])], width, prior=verdict, on=self.device)
            stalled = stalled + 1 if verdict is not None and again.near_ties <= verdict.near_ties else 0
            verdict, unstable = again, unstable or again.moved
            if verdict.ok or stalled >= STALL_CYCLES * (count + 1):  # passed, or the rest is not a tie
                return verdict
            if not unstable and k + 1 >= STABLE_CYCLES * (count + 1):  # no nudge moved anything: stable
                return verdict
        return verdict

    def _nudged_output(
        self,
        j: int,
        idx: int,
        inputs: Callable[[], list[Any]],
        direction: tuple[int, int, int | None],
        rng_seed: int | None,
    ) -> torch.Tensor | None:
        """The reference's output j on the call's inputs nudged along `direction` (seed, sign, part)."""
        size = nudge_size(self.op.workloads[idx].tolerance.rtol)
        nudged_inputs = nudged(inputs(), *direction[:2], size, direction[2])
        try:
            result, _ = self.reference.outputs(idx, nudged_inputs, rng_seed=rng_seed)
        except Exception:  # e.g. a reference that validates its inputs' exact values
            return None
        result = [*result, *(nudged_inputs[i] for i in self.contract["compared"])]
        if j >= len(result):
            return None
        alt = self._as_tensor(result[j], j)
        return self._by_value(alt) if isinstance(alt, torch.Tensor) else None
