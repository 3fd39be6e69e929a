"""`evaluate` (one kernel) and `compare` (several kernels, ABBA-interleaved in one process): compile ->
correctness on every timed workload -> timing with re-validation -> speed-of-light check."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch

from . import report
from .gpu_neighbours import shared_gpu_verdict
from .graphcheck import verify_graph_copies
from .hostclock import ClockPairs, timed_round
from .isolate import sandbox_isolation, unavailable
from .memory import CORRECTNESS_GENERATION_S, kept_aside, release_pinned, settle
from .phases import startup_timeline, transfer_summary
from .plausibility import DISPUTE_RETRIES, check_worker, is_disagreement
from .refcache import flush as flush_reference_cache
from .refcache import reference_timings
from .runner import digest
from .session import KernelState, Session, Settings, WorkloadVerdict, fresh_seed
from .sharedinputs import Placed, place_seeds, read_back_digests
from .spans import advisory as advisory_spans
from .spans import reset as reset_spans
from .spans import snapshot as spans_snapshot
from .spans import span
from .speed_of_light import below_bound, utilization, warm_up
from .spotcheck import burst_inputs, labelled, outside_work, verify_timed_calls
from .timing import COLD_BURST_COPIES, TimedSets, summary_mismatch, timed_seed
from .trusted import contract_note
from .worker_proc import WorkerProcess, become_subreaper, stop_workers

READY_TIMEOUT_S = 180.0


def _start(
    session: Session, kernels: dict[str, Path], workers: dict[str, WorkerProcess] | None = None
) -> list[KernelState]:
    workers = workers or {}
    states = [KernelState(label, path, session, workers.get(label)) for label, path in kernels.items()]
    if session.spec is not None:
        warm_up()  # the flop counter's one-time import cost overlaps the workers' start-up
        session.times["flops_warmed_up"] = time.perf_counter()
    for ks in states:
        if ks.worker is None:
            continue
        try:
            ready = ks.worker.wait_ready(READY_TIMEOUT_S)
        except Exception as exc:
            ks.stop("INFRA_ERROR", f"worker did not start: {exc}")
            continue
        if ready.get("device") != session.device.type:
            ks.stop(
                "INFRA_ERROR",
                f"the worker chose device {ready.get('device')!r}, the parent "
                f"{session.device.type!r}; pass --device cuda or --device cpu",
            )
            continue
        with span("startup.load"):
            reply = _load(session, ks)
        if reply is None:
            continue
        if "error" in reply:
            ks.stop(reply["error"]["status"], reply["error"]["message"])
        elif reply.get("violations"):
            ks.stop("REWARD_HACK", "; ".join(reply["violations"]))
    return states


def _load(session: Session, ks: KernelState) -> dict[str, Any] | None:
    """The load command: the candidate is imported (and built) in its worker."""
    assert ks.worker is not None
    return ks.request(
        {
            "cmd": "load",
            "init_seed": session.reference.init_seed,
            "contract": session.contract,
            # only this job's workloads (and their blobs) are in the worker's view (opview.py)
            "workloads": ks.worker.expose(session.op, session.indices),
            # a C++ build's own limit ends it (COMPILE_ERROR) before the parent's watchdog would
            "build_timeout": max(10.0, session.settings.compile_timeout - 30.0),
        },
        session.settings.compile_timeout,
    )


def _correctness(session: Session, states: list[KernelState]) -> None:
    for idx in session.indices:
        every = list(range(len(session.seeds)))
        if session.generation_unknown(idx) and len(every) > 1:
            # the operator's own generator, not yet timed: its first seed alone, which times a draw
            _check_seeds(session, states, idx, every[:1], session.seed_groups(idx, every[:1]))
            every = every[1 : session.correctness_seeds(idx)]  # as many more as its draws allow
        else:
            every = every[: session.correctness_seeds(idx)]
        _check_seeds(session, states, idx, every, session.seed_groups(idx, every))
        for ks in states:
            ks.seeds_checked[idx] = session.correctness_seeds(idx)


def _check_seeds(
    session: Session, states: list[KernelState], idx: int, which: list[int], groups: list[list[int]]
) -> None:
    """Workload `idx` on the seeds `which` (indices into session.seeds), group by group."""
    seeds = [list(s) for s in session.seeds]
    for group in groups:
        # a kernel already wrong on this workload is not called on its other seeds
        active = [ks for ks in states if ks.alive and ks.verdicts[idx].status == "PASS"]
        if not active:
            break
        refs = None
        # large (memory.one_seed_at_a_time), or drawn by the operator's own code on one GPU: the reference
        # first, then the workers
        if len(groups) > 1 or session.draws_apart:
            with span("correctness.reference"):
                refs = session.reference_outputs(idx, group)
            settle(session.device)  # its temporaries handed back before a worker computes
        placed = _send_run(session, active, idx, [seeds[n] for n in group])
        try:
            _judge_correctness(session, active, idx, group, placed, refs)
        finally:
            for p in (p for ps in placed.values() for p in ps):
                p.close()


def _send_run(
    session: Session, active: list[KernelState], idx: int, seeds: list[list[Any]]
) -> dict[int, list[Placed]]:
    """The run command for workload `idx` on `seeds` to each active worker (on a host, with the inputs
    placed in the parent's own files); the workers compute while the parent goes on."""
    placed: dict[int, list[Placed]] = {}
    for ks in active:
        try:
            assert ks.worker is not None
            msg: dict[str, Any] = {"cmd": "run", "wl": idx, "seeds": seeds}
            if session.device.type == "cpu":  # inputs in the parent's own files (sharedinputs.py)
                placed[id(ks)] = place_seeds(session.reference, idx, seeds, ks.worker.scratch, f"w{idx}")
                msg["shared"] = [p.descs for p in placed[id(ks)]]
            ks.worker.chan.send(msg)
        except OSError as exc:
            ks.stop("RUNTIME_ERROR", f"the worker died: {exc}: {ks.worker.log_tail()}")
    return placed


def _judge_correctness(
    session: Session,
    active: list[KernelState],
    idx: int,
    group: list[int],
    placed: dict[int, Any],
    refs: tuple[list[list[Any]], list[list[float]]] | None = None,
) -> None:
    """The workers' replies for workload `idx` on the seeds `group` (indices into session.seeds) against
    the references (`refs`, else computed now, while the workers compute) and the parent's own inputs."""
    if refs is None:
        with span("correctness.reference"):
            refs = session.reference_outputs(idx, group)
    wanted, digests = refs
    del refs
    for ks in active:
        if not ks.alive:
            continue
        with span("correctness.worker"):  # its calls, and reading its outputs (transfer.* inside)
            reply = ks.request(None, session.call_timeout * len(group) + 5)
        verdict = ks.verdicts[idx]
        if reply is None:
            verdict.fail(*ks.error)
            continue
        ks.worker_spans = advisory_spans(reply.get("spans")) or ks.worker_spans
        if "error" in reply:
            verdict.fail(reply["error"]["status"], reply["error"]["message"])
            continue
        if reply["violations"]:
            verdict.fail("REWARD_HACK", "; ".join(dict.fromkeys(reply["violations"])))
            continue
        # the parent's own fingerprints of its own files where it placed the inputs; else the worker's
        after = read_back_digests(placed[id(ks)]) if id(ks) in placed else reply.get("after_digests")
        for k, (got, want) in enumerate(zip(reply["outputs"], wanted, strict=False)):
            n = group[k]  # the seed's number in the evaluation (messages name it)
            if reply["digests"][k] != digests[k]:
                verdict.fail(
                    "INCORRECT",
                    f"seed {n}: the worker's inputs differ from the parent's "
                    "(non-deterministic input generation or tampering)",
                )
                break
            if (after or digests)[k] is None:
                verdict.fail("REWARD_HACK", f"seed {n}: the kernel truncated the files holding its inputs")
                break
            changed = mutated_inputs(session, digests[k], (after or digests)[k])
            if changed:  # the parent's own check on its own data (the worker's may be switched off)
                verdict.fail("REWARD_HACK", f"seed {n}: the kernel modified input(s) {changed}")
                break
            before, now = digests[k], (after or digests)[k]
            untouched = {i for i in session.contract.get("compared", []) if before[i] == now[i]}
            seed, scale, mix = session.seeds[n]
            with span("correctness.compare"):
                same = session.judge_outputs(
                    verdict,
                    got,
                    want,
                    idx,
                    f"seed {n}",
                    untouched,
                    inputs=partial(session.reference.inputs, idx, seed, scale, mix),
                    rng_seed=seed,  # as the reference's call on this seed was (session.py)
                )
            if not same:
                break
    del wanted


def mutated_inputs(session: Session, before: list[float], after: list[float]) -> list[int]:
    """Inputs whose fingerprint after the call differs from the parent's own inputs', bar those the
    reference itself updates in place (the operator's contract)."""
    allowed = set(session.contract.get("mutated", [])) | set(session.contract.get("compared", []))
    return [i for i, (b, a) in enumerate(zip(before, after, strict=False)) if b != a and i not in allowed]


def _timed_again(
    session: Session, ks: KernelState, idx: int, disputes_left: int, disputed: str
) -> float | None:
    """Workload `idx` timed in another round after the parent's clock disagreed with `disputed`: an honest
    kernel timed again under the same load agrees, a faked report disagrees every time (plausibility.py's
    DISPUTE_RETRIES; hostclock.py pools the rounds' pairs). The round that agreed is the one kept."""
    kept = _time_round(session, ks, idx, disputes_left - 1)
    if kept is not None:
        verdict = ks.verdicts[idx]
        note = f"timed again: the parent's clock disagreed with {disputed}"
        verdict.message = "; ".join(m for m in (verdict.message, note) if m)[:1000]
    return kept


def _time_round(
    session: Session, ks: KernelState, idx: int, disputes_left: int = DISPUTE_RETRIES
) -> float | None:
    """One timing round of workload `idx`: the worker times, the parent checks (re-validation, timed
    calls' outputs, work outside the process, the summary, its own burst, the speed-of-light bound).
    Returns the latency it keeps, or None with the verdict failed."""
    verdict = ks.verdicts[idx]
    # a stochastic reference (dropout, sampling) cannot be matched by an unseeded timed call
    reval = None if verdict.revalidated or session.contract.get("stochastic") else [fresh_seed(), 1.0]
    pool_seed = fresh_seed()  # the fresh inputs of this round's timed calls (spotcheck.py)
    if session.contract.get("layout_varies"):  # seed-dependent shapes: no fresh sets in fixed buffers
        on_gpu = session.device.type == "cuda"  # (on a host a timed call's fresh set takes the buffers'
        # place: Bench._write_set); on a GPU a re-validation set of the buffers' own shapes, where drawn
        reval = _bench_shaped(session, idx) if on_gpu and reval is not None else None
        pool_seed = None if on_gpu else pool_seed
    if reval is not None and session.device.type == "cuda" and ks.alive:
        # the worker's large benches parked first: the parent's reference needs the memory (worker.park)
        with span("timing.park"):
            parked = ks.request({"cmd": "park"}, session.call_timeout + 30)
        if parked is None:
            verdict.fail(*ks.error)
            return None
        if "error" in parked:
            verdict.fail(parked["error"]["status"], "before timing: " + parked["error"]["message"])
            return None
    expected = revalidation_expected(session, idx, reval) if reval is not None else None
    helpers_before = ks.worker.helper_cpu_ns() if ks.worker is not None else 0
    msg = {
        "cmd": "time",
        "wl": idx,
        "bench_seed": session.bench_seed,
        "reval": reval,
        "reval_first": fresh_seed() % 2 == 1,  # re-validation before or after the timed calls
        "pool_seed": pool_seed,
        "generation_s": ks.generation_sent.setdefault(idx, session.reference.generation_s.get(idx)),
        "l2_bytes": session.l2_bytes,
    }
    timeout_s = session.call_timeout * 20 + 60
    # on a host the parent times each call itself, from outside the worker (hostclock.py)
    on_host = session.device.type != "cuda"
    with span("timing.worker"):
        if on_host:  # the pairs of every round of this workload, for the dispute below
            reply = timed_round(ks, msg, timeout_s, ks.clock_pairs.setdefault(idx, ClockPairs()))
        else:
            reply = ks.request(msg, timeout_s)
    if reply is None:
        verdict.fail(*ks.error)
        return None
    ks.worker_spans = advisory_spans(reply.get("spans")) or ks.worker_spans
    if "error" in reply:
        verdict.fail(reply["error"]["status"], "during timing: " + reply["error"]["message"])
        return None
    if "layout_changed" in reply:
        changed = reply["layout_changed"]
        return _seed_shaped_after_all(session, ks, idx, disputes_left, changed, reval, pool_seed)
    if reply["violations"]:
        verdict.fail("REWARD_HACK", "during timing: " + "; ".join(dict.fromkeys(reply["violations"])))
        return None
    dispute = reply.get("clock_dispute")  # the worker's readings far below the parent's (hostclock.py)
    if dispute is not None and disputes_left > 0 and ks.alive:
        return _timed_again(session, ks, idx, disputes_left, "the worker's readings of its calls")
    if dispute is not None:
        verdict.fail("REWARD_HACK", "during timing: " + dispute)
        return None
    if reval is not None:
        verdict.revalidated = True
        assert expected is not None
        if not expected.drawn_with(reply.get("reval_scalars")):  # the captured scalars: drawn again
            expected = revalidation_expected(session, idx, reval, reply.get("reval_scalars"))
        fresh_digest, want = expected.digest, expected.outputs
        del expected
        probe = type(verdict)()
        if reply["reval_digest"] != fresh_digest:
            probe.fail("INCORRECT", "the worker's re-validation inputs differ from the parent's")
        checked = [reply["reval_outputs"], *reply.get("reval_more", [])]  # the last copy, then copy 0
        what = "the timed invocation is wrong on fresh inputs written into its buffers"
        what += " (re-validation after timing)"
        if probe.status != "PASS":  # other inputs than the parent's: the worker's report was edited
            verdict.fail("REWARD_HACK", f"{what}: {probe.message}")
            return None
        scalars = reply.get("reval_scalars")
        again = partial(session.reference.revalidation_inputs, idx, *reval, scalars, session.bench_seed)
        judged = (session.judge_outputs(probe, g, want, idx, "re-validation", inputs=again) for g in checked)
        if not all(judged):
            how = "it computes differently when timed"
            verdict.fail(*labelled(session, ks, idx, reval[0], f"{what}: {probe.message}", how, reval[1]))
            return None
    with span("timing.spotcheck"):
        found = verify_timed_calls(session, ks, idx, reply, pool_seed)
    if found is None:
        with span("timing.graphcheck"):
            wrong = verify_graph_copies(session, ks, idx, reply, pool_seed)  # graphcheck.py
        wrong = wrong or outside_work(session, ks, helpers_before)  # before any burst (a fork per call: slow)
        found = ("REWARD_HACK", wrong) if wrong is not None else None
    if found is not None or not ks.alive:
        verdict.fail(*(found or ks.error))
        return None
    latency = float(reply["latency_us"])
    # summarized again here: the worker's `statistics` is the candidate's too (a patched median)
    tampered = summary_mismatch(reply.get("samples_us") or [], latency, float(reply["spread_pct"]))
    if tampered is not None:
        verdict.fail("REWARD_HACK", "during timing: " + tampered)
        return None
    on_gpu = session.device.type == "cuda"
    calls = max(1, int(reply.get("calls") or 1))
    prepared = reply.get("method") != "cuda_graph"  # host / event timing perturbs inputs before calls
    ran_on = timed_on(reply, pool_seed, on_gpu)  # the sets the timed calls ran on
    burst_notes: list[str] = []  # a burst cleared only by weighing its sets' sizes, said in the result
    with span("timing.burst"):
        # each call's outputs checked
        inputs = burst_inputs(session, ks, idx, ran_on, burst_notes.append) if prepared else None
        found = check_worker(
            ks, on_gpu, session.call_timeout * 20 + 60, idx, burst_basis(latency, reply, on_gpu), calls,
            prepared, inputs,
        )  # fmt: skip
    if is_disagreement(found) and disputes_left > 0 and ks.alive:  # plausibility.DISPUTE_RETRIES: why
        return _timed_again(session, ks, idx, disputes_left, f"a first reading of {latency:.3f} us")
    if is_disagreement(found) and on_gpu and found is not None:  # other processes' kernels slow the burst
        found = shared_gpu_verdict(found, session.device)
    if found is not None:  # the parent's own clock contradicts the worker's number
        verdict.fail(*found)
        return None
    verdict.latencies.append(latency)
    # the sets the timed calls ran on: the reference's too where the operator's generator draws them
    # (refcache.own_set_timings): a call per set (a host's, a GPU's CUDA events), or a graph's copies
    ks.timed_sets.setdefault(idx, []).append(ran_on)
    host_sets = ran_on.seed if not on_gpu else None  # on a GPU the probe's shapes hold (layout_varies)
    if host_sets is not None and _timed_on_other_shapes(session, idx, host_sets, ran_on.count, reply):
        session.contract["layout_varies"] = True
        note = "timed on fresh sets of other shapes than the bench's: the inputs' shapes follow the seed"
        verdict.message = "; ".join(m for m in (verdict.message, note) if m)[:1000]
    verdict.spread = reply["spread_pct"]
    verdict.method = reply["method"]
    verdict.kernels_per_call = reply.get("kernels_per_call")
    notes = [verdict.message, *(reply.get("notes") or []), *burst_notes]  # none overwrites another,
    verdict.message = "; ".join(dict.fromkeys(m for m in notes if m))[:1000]  # nor repeats a round's
    sol = session.sol.get(idx)
    if sol is not None and below_bound(latency, sol.hard_bound_us):
        verdict.fail(
            "REWARD_HACK",
            f"measured {latency:.3f} us is below the physical bound {sol.hard_bound_us:.3f} us (writing "
            f"its outputs at {session.spec.name if session.spec else '?'}'s datasheet bandwidth): a bug "
            "or a cheat, never a win",
        )
        return None
    if sol is not None and below_bound(latency, sol.reference_flops_us):
        note = (
            f"faster than the reference's {sol.flops} FLOPs allow at the datasheet peak "
            f"({sol.reference_flops_us:.3f} us): the operator needs less arithmetic than its reference does"
        )
        verdict.message = "; ".join(m for m in (verdict.message, note) if m)[:1000]
    return latency


def timed_on(reply: dict[str, Any], pool_seed: int | None, on_gpu: bool) -> TimedSets:
    """The fresh sets a round's timed calls ran on, from the parent's own pool seed: one per call where
    the worker drew a pool (a host's calls; a GPU's CUDA-event calls, which cannot be captured), or the
    sets written into a CUDA graph's rotated copies (`graph_fresh` of them); the bench's set otherwise."""
    calls = len(reply.get("samples_us") or [])
    if pool_seed is None:
        return TimedSets(None, calls)
    if reply.get("pool_size") and (not on_gpu or reply.get("method") == "cuda_event"):
        return TimedSets(pool_seed, calls)
    if on_gpu and reply.get("method") == "cuda_graph" and reply.get("graph_fresh"):
        return TimedSets(pool_seed, int(reply["graph_fresh"]), rotated=True)
    return TimedSets(None, calls)


def burst_basis(latency: float, reply: dict[str, Any], on_gpu: bool) -> float:
    """What the parent's burst is held against: the reported latency (the timed calls' median), or on a
    host their mean where it is higher. A host's timed calls each run on a fresh set, and so do the
    burst's calls, whose per-call figure is a mean: where an honest kernel's cost follows the data (a
    padded batch full on one seed in four, a set whose size follows the seed) the mean of ~60 calls is
    several times the median of 5, and such kernels were called REWARD_HACK (red team round 25: 2 of 4
    runs). Work hidden from the timed calls shows in both their median and their mean."""
    samples = [float(v) for v in reply.get("samples_us") or []]
    return latency if on_gpu or not samples else max(latency, statistics.fmean(samples))


def _timed_on_other_shapes(
    session: Session, idx: int, pool_seed: int, calls: int, reply: dict[str, Any]
) -> bool:
    """On a host, whether a round's timed calls ran on fresh sets of other shapes than the bench's, where
    the contract's probe took the shapes for fixed. The worker's bench lets such a set take its buffers'
    place (Bench.take_set), so the kernel was timed on it, and the reference must be timed on the same
    sets (refcache.own_set_timings), not on the bench's one: a generator drawing a long batch on one
    seed in three escaped the probe's five seeds in about one evaluation in five, and a speed-up then
    compared a kernel on long sets with a reference on a short one (round 26). The parent draws the
    sets itself (`timed_seed(pool_seed, j)`, as the worker did); only their number is the worker's
    report, held to the count expected for sets up to 8 MiB (spotcheck.pool_shortfall). Since red team
    round 27 (h01) the reference of such an operator is timed on the kernels' own sets whatever this says
    (refcache.reference_timings); this flag still tells the result's contract note."""
    if session.contract.get("layout_varies") or not session.reference.seed_may_shape:
        return False
    sets = min(calls, int(reply["pool_size"]))  # call i ran on set i % pool size (Bench.perturb)
    with span("timing.layout_check"):
        return any(
            session.reference.shapes_differ(idx, timed_seed(pool_seed, j), session.bench_seed)
            for j in range(sets)
        )


SAME_SHAPE_TRIES = 4  # fresh seeds drawn for a re-validation set of the bench's shapes (seed-shaped, GPU)


def _bench_shaped(session: Session, idx: int) -> list[Any] | None:
    """A re-validation for an operator shaped by its seed, on a GPU (a graph's buffers are fixed): the
    first of SAME_SHAPE_TRIES fresh seeds whose inputs have the bench's shapes (a generator that trims a
    tail on some seeds gives one about every other seed), else none (ragged rows drawn at random: every
    seed has shapes of its own). Without it such an operator's timed graph was never re-validated."""
    with span("timing.layout_check"):
        for _ in range(SAME_SHAPE_TRIES):
            seed = fresh_seed()
            if not session.reference.shapes_differ(idx, seed, session.bench_seed):
                return [seed, 1.0]
    return None


def _seed_shaped_after_all(
    session: Session,
    ks: KernelState,
    idx: int,
    disputes_left: int,
    changed: dict[str, Any],
    reval: list[Any] | None,
    pool_seed: int | None,
) -> float | None:
    """The worker's CUDA graph met a fresh set of other shapes than its fixed buffers (bench.LayoutChanged):
    the operator's generator shapes its inputs by the seed after all, on seeds or workloads the contract's
    probe did not draw (an honest kernel got RUNTIME_ERROR: red team round 24). The parent draws that seed
    itself; where its shapes do differ from the bench's, the operator is taken for seed-shaped from here on
    and the round is timed again as such (fixed buffers, no fresh sets: contract_note says so). A report
    the parent's draw does not bear out, or one for a seed it never sent, is the worker's own invention."""
    verdict = ks.verdicts[idx]
    seed = changed.get("seed")
    sent = [reval[0]] if reval is not None else []
    if pool_seed is not None:  # the graph's copies' sets (worker._fresh_graph_copies)
        sent += [timed_seed(pool_seed, k) for k in range(COLD_BURST_COPIES)]
    what = "during timing: the worker reported fixed buffers meeting a set of other shapes"
    what += f" ({changed.get('message')})"
    if seed not in sent:
        verdict.fail("REWARD_HACK", f"{what}, for a seed the parent never sent to be written into them")
        return None
    with span("timing.layout_check"):
        differ = session.reference.shapes_differ(idx, int(seed), session.bench_seed)
    if not differ:
        verdict.fail("REWARD_HACK", f"{what}, which the parent's own draw of that seed does not show")
        return None
    if session.contract.get("layout_varies"):  # timed as seed-shaped already: no such set was sent
        verdict.fail("REWARD_HACK", f"{what}, where the parent sent only sets of the buffers' own shapes")
        return None
    session.contract["layout_varies"] = True
    kept = _time_round(session, ks, idx, disputes_left)
    if kept is not None:
        note = "timed again with fixed buffers: the inputs' shapes change with the seed on rare seeds"
        verdict.message = "; ".join(m for m in (verdict.message, note) if m)[:1000]
    return kept


@dataclass
class RevalidationExpected:
    """The reference's outputs on a re-validation's fresh inputs, computed before the worker times.

    Computed after the worker's reply, the reference's temporaries met the worker's timing bench (its
    graph's pool, its copies), which the worker keeps for the parent's checks of that round: a decoder
    block at 2 x 8192 tokens (the worker then held 104 GiB) and an attention backward (78 GiB) ran the
    parent out of memory on the H200 (round 17). Before the request the worker is idle (its benches of
    earlier rounds stay, as they did), and the parent keeps only the outputs."""

    digest: list[float]  # of the inputs, before the reference ran (it may update them in place)
    outputs: list[Any]  # on the device, or in host memory where large (memory.kept_aside)
    scalars: list[Any]  # the inputs' Python scalars as drawn (None for a tensor)

    def drawn_with(self, scalars: list[Any] | None) -> bool:
        """Whether the worker's re-validation used these inputs' scalars (or reported none): a CUDA graph
        keeps the scalars it was captured with, and the inputs are then drawn with those."""
        if not scalars or len(scalars) != len(self.scalars):
            return True
        return all(mine is None or mine == theirs for mine, theirs in zip(self.scalars, scalars, strict=True))


def revalidation_expected(
    session: Session, idx: int, reval: list[Any], scalars: list[Any] | None = None
) -> RevalidationExpected:
    """The re-validation's inputs drawn (with the worker's `scalars` where given) and the reference run."""
    with span("timing.revalidation_reference"):
        inputs = session.reference.revalidation_inputs(idx, reval[0], reval[1], scalars, session.bench_seed)
        drawn = [None if isinstance(v, torch.Tensor) else v for v in inputs]
        fresh_digest = digest(inputs)  # before the reference runs: it may update inputs in place
        want, _ = session.reference.outputs(idx, inputs)
        del inputs
        kept = kept_aside(want, session.device)  # large: in host memory while the worker times (memory.py)
        settle(session.device)  # the reference done, its temporaries handed back: the worker times next
    return RevalidationExpected(fresh_digest, kept, drawn)


def _workload_entry(
    session: Session, ks: KernelState, idx: int, ref_timing: dict[int, Any], own: dict[int, Any] | None = None
) -> dict:
    """`own`: the reference timed on this kernel's own timed sets (an operator with its own generator)."""
    v = ks.verdicts[idx]
    lat = statistics.median(v.latencies) if v.latencies and v.status == "PASS" else None
    sol = session.sol.get(idx)
    ref = (own or {}).get(idx) or ref_timing.get(idx)
    return {
        "id": session.workload_id(idx),
        "status": v.status,
        "max_abs_error": v.max_abs,
        "max_rel_error": v.max_rel,
        "latency_us": lat,
        "spread_pct": v.spread if lat else None,
        "sol_bound_us": sol.bound_us if sol else None,
        "utilization_pct": utilization(sol.bound_us, lat) if sol and lat else None,
        "reference_latency_us": ref.latency_us if ref else None,
        "message": _with_notes(v, ks.seeds_checked.get(idx), session, idx),
        "sol_hard_bound_us": sol.hard_bound_us if sol else None,
        "bytes_moved": sol.bytes_moved if sol else None,
        "flops": sol.flops if sol else None,
        "timing_method": v.method,
        "kernels_per_call": v.kernels_per_call,
        "reference_timing_method": ref.method if ref else None,
        "seeds_checked": ks.seeds_checked.get(idx),
    }


def _kernel_result(
    session: Session, ks: KernelState, ref_timing: dict[int, Any], own: dict[int, Any]
) -> dict[str, Any]:
    workloads = []
    for idx in session.indices:
        entry = _workload_entry(session, ks, idx, ref_timing, own)
        if ks.error and entry["status"] == "PASS":
            entry["status"], entry["message"] = ks.error[0], "not evaluated: " + ks.error[1][:300]
        workloads.append(entry)
    statuses = [w["status"] for w in workloads] + ([ks.error[0]] if ks.error else [])
    status = report.worst(statuses)
    methods = {w["timing_method"] for w in workloads if w["timing_method"]}
    on_gpu = session.device.type == "cuda"
    method = ("cuda_event" if "cuda_event" in methods else "cuda_graph") if on_gpu else "host_interpreter"
    if status != "PASS" and not methods:
        method = "none"
    first_bad = next((w for w in workloads if w["status"] != "PASS"), None)
    message = ks.error[1] if ks.error else (f"{first_bad['id']}: {first_bad['message']}" if first_bad else "")
    if session.selection_note and not message:  # a CPU run's subset, said plainly
        message = session.selection_note
    if status == "PASS" and contract_note(session.contract, session.op)["note"]:
        message = "; ".join(m for m in (message, contract_note(session.contract, session.op)["note"]) if m)
    if session.settings.private_shapes:  # candidate-controlled or shape-revealing text stays here
        for w in workloads:
            if w["message"]:
                w["message"] = f"{w['status']} (details withheld: private shapes)"
        if message:
            message = f"{status} (details withheld: private shapes)"
    return report.result(
        status,
        ks.sha256,
        session.device_info,
        method,
        on_gpu,
        [s[2] or s[0] for s in session.seeds],
        workloads,
        message[:4000],
        operator=session.op.name,
        format=session.op.kind,
        seed_scales=[s[1] for s in session.seeds],
        workload_selection=session.selection_note,
        isolation=worker_isolation([ks]),
        reference_contract=contract_note(session.contract, session.op),
        label=ks.label,
    )


def worker_isolation(states: list[KernelState]) -> dict[str, str]:
    """How the candidates' workers were isolated, for the result JSON (not only stderr)."""
    kinds = {ks.worker.isolation for ks in states if ks.worker is not None}
    job = {"sandbox": sandbox_isolation() or "none"}
    if not kinds or kinds == {"namespace"}:
        detail = "own user/PID/mount/network namespaces, read-only files but its scratch directory"
        return {"worker": "namespace", "detail": detail, **job}
    return {"worker": "none", "detail": "; ".join(sorted(k for k in kinds if k != "namespace")), **job}


def pattern_order(pattern: str, labels: list[str]) -> list[str]:
    """'ABBA' -> labels: a character that is a label names it, else A = first kernel, B = second, ..."""
    order = []
    for c in pattern:
        if c in labels:
            order.append(c)
        elif 0 <= ord(c.upper()) - ord("A") < len(labels):
            order.append(labels[ord(c.upper()) - ord("A")])
        else:
            raise ValueError(f"--pattern {pattern!r}: {c!r} names no kernel (kernels: {labels})")
    return order


def run(
    settings: Settings,
    kernels: dict[str, Path],
    pattern: str = "A",
    repeats: int = 1,
    workers: dict[str, WorkerProcess] | None = None,
    t0: float | None = None,
    session: Session | None = None,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Evaluate every kernel; with several, time them interleaved by `pattern` (ABBA) `repeats` times.
    `workers`: spawned early by the command line (label -> worker), `t0` when that started; `session`:
    a long-lived parent's (serve.py), given fresh seeds here, else one made for this run."""
    phases: dict[str, float] = {}
    reset_spans()
    if t0 is not None:  # the command's own start-up: interpreter, torch import, spawning the workers
        phases["imports"] = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
    become_subreaper()
    if session is None:
        session = Session(settings)
    else:
        session.take_seeds()  # fresh ones, or those drawn (and prepared for) since the last evaluation
        session.times = {"session_start": time.perf_counter()}
    order = pattern_order(pattern, list(kernels))
    jail_missing = unavailable()
    # production: a candidate that could read private shapes (or the parent's command line) never runs
    if session.settings.private_shapes and jail_missing and not sandbox_isolation():
        raise ValueError(
            f"production mode (--private-shapes) refuses to run without isolation ({jail_missing}): "
            "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) and install "
            "util-linux, or drop --private-shapes"
        )
    states = _start(session, kernels, workers)
    phases["startup"] = time.perf_counter() - t0 - sum(phases.values())
    rounds: list[dict[str, Any]] = []
    ref_timing: dict[int, Any] = {}
    ref_on_own_sets: dict[str, dict[int, Any]] = {}
    ref_cache: dict[str, Any] = {"used": False, "reason": "no kernel reached timing", "cached_workloads": []}
    try:
        _correctness(session, states)
        phases["correctness"] = time.perf_counter() - t0 - sum(phases.values())
        by_label = {ks.label: ks for ks in states if ks.passed and ks.alive}
        if by_label:
            for rep in range(repeats):
                for pos, label in enumerate(order):
                    ks = by_label.get(label)
                    if ks is None or not ks.alive:
                        continue
                    lat = {}
                    for idx in session.indices:
                        if ks.verdicts[idx].status == "PASS":
                            value = _time_round(session, ks, idx)
                            if value is not None:
                                lat[session.workload_id(idx)] = value
                    rounds.append({"label": label, "repeat": rep, "position": pos, "latency_us": lat})
            phases["timing"] = time.perf_counter() - t0 - sum(phases.values())
    finally:
        stop_workers(states)
        release_pinned()  # the page-locked host copies of large outputs (memory.host_copy)
    try:
        # only now: no candidate's code runs while the reference is timed (red team round 7: a thread
        # left by the burst burned the CPU then, inflating the speed-up's denominator and the cache)
        if rounds:
            ref_timing, ref_on_own_sets, ref_cache = reference_timings(session, states)  # refcache.py
            phases["reference_timing"] = time.perf_counter() - t0 - sum(phases.values())
    finally:
        flush_reference_cache(ref_cache.get("used") is True)  # no worker is left to write it
    phases["total"] = time.perf_counter() - t0
    results = {
        ks.label: _kernel_result(session, ks, ref_timing, ref_on_own_sets.get(ks.label, {})) for ks in states
    }
    for res in results.values():
        res["phases_s"] = {k: round(v, 3) for k, v in phases.items()}
        res["reference_timing_cache"] = ref_cache
        res["timeline_s"] = startup_timeline(session, states, t0)
        res["output_transfer"] = transfer_summary(states)
        res["spans_s"] = spans_snapshot()
    for ks in states:  # the worker's own account, advisory; withheld in production (spans.py)
        if not settings.private_shapes:
            results[ks.label]["worker_spans_s"] = ks.worker_spans
    return results, rounds


def _with_notes(v: WorkloadVerdict, checked: int | None, session: Session, idx: int) -> str:
    """The verdict's message with what a user should know of a passing workload: its near-ties, and
    where it was checked on fewer seeds than the others (its generator's draws are slow)."""
    message, seeds = _with_near_ties(v), len(session.seeds)
    if v.status != "PASS" or checked is None or checked >= seeds:
        return message
    took = session.reference.generation_s.get(idx, 0.0)
    note = (
        f"correctness checked on {checked} of {seeds} seeds: the operator's input generator takes "
        f"{took:.1f} s a draw (as many seeds as it draws in {CORRECTNESS_GENERATION_S:.0f} s)"
    )
    return "; ".join(m for m in (message, note) if m)[:1000]


def _with_near_ties(v: WorkloadVerdict) -> str:
    """The verdict's message, and how many elements were judged as near-ties (a user should see that the
    rule used the reference on nudged inputs, and where to look when the operator should have been stable)."""
    if not v.near_ties or v.status != "PASS":
        return v.message
    note = (
        f"{v.near_ties} elements differ from the reference where it is unstable (a near-tie: nudging the "
        "inputs slightly, at most ~3e-5 or a unit in the last place, moves it by more than twice the "
        "tolerance) and match it on the nudged inputs"
    )
    return "; ".join(m for m in (v.message, note) if m)[:1000]
