"""After-the-fact verification of timed calls by the trusted parent (issue 13, class 1).

Every eagerly timed call (host timing, the CUDA-event fallback) runs on its own fresh inputs, derived from
a seed the parent drew for the round (`timing.timed_seed`), and the worker keeps each call's outputs.
Only once the timing is reported does the parent draw which calls to check, regenerate their inputs,
run the reference and compare. A kernel that counts calls, or recognises timed inputs, and skips the
work while timed cannot know which of its timed calls will be checked: to move the median it must skip
most of them, and then a random sample of a few finds one with near certainty. The parent's own timing
burst is verified the same way (verify_burst_calls): the burst is where work done outside the timed
calls would show, so a kernel doing that must skip its work there instead.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from functools import partial
from typing import Any

from . import gpu_neighbours
from .layout import value_bytes
from .memory import SMALL_BYTES, fresh_sets
from .plausibility import BurstInputs
from .runner import digest
from .spans import span
from .timing import TimedSets, timed_seed

VERIFIED_HOST = 3  # of at most 5 timed calls: skipping the 3 that move the median is always caught
VERIFIED_EVENTS = 5  # of 30: skipping half of them escapes with probability ~3 %


def choose(kept: list[int], on_gpu: bool, rng: random.Random | None = None) -> list[int]:
    """Which timed calls to check, drawn from os.urandom after the timing was reported."""
    rng = rng or random.SystemRandom()
    want = VERIFIED_EVENTS if on_gpu else VERIFIED_HOST
    return sorted(rng.sample(kept, min(want, len(kept))))


Finding = tuple[str, str]  # (status, message)


def verify_timed_calls(
    session: Any, ks: Any, idx: int, reply: dict[str, Any], pool_seed: int | None
) -> Finding | None:
    """None when the chosen timed calls computed the right outputs, else the finding: REWARD_HACK, or
    INCORRECT where an untimed call on the same inputs is wrong too (`labelled`)."""
    size = int(reply.get("pool_size") or 0)
    if reply.get("method") == "cuda_graph" or (session.contract.get("stochastic") and _on_gpu(session)):
        # (a stochastic reference on a GPU: an unseeded timed call's random draws cannot match it; on a
        # host the worker seeds each timed call as the reference is seeded here, Bench.use_pool)
        return None  # graph replays: re-validation replays the very graph on fresh inputs
    sent = ks.generation_sent.get(idx)  # what the round's request allowed (memory.generator_sets)
    short = pool_shortfall(session, idx, size, sent) if pool_seed is not None else None
    if short:
        return "REWARD_HACK", short
    if size <= 0 or pool_seed is None:
        return None  # inputs too large for fresh sets: the timed calls' perturbation stays (bench.py)
    samples = len(reply.get("samples_us") or [])
    kept = [int(i) for i in reply.get("kept") or []]
    if kept != list(range(samples)):
        return (
            "REWARD_HACK",
            f"the worker kept the outputs of timed calls {kept[:8]}, not of all {samples} it timed",
        )
    chosen = choose(kept, session.device.type == "cuda")
    wrong = _first_wrong(session, ks, idx, chosen, pool_seed, size, burst=False)
    if wrong is None:
        return None
    i, why, call_seed = wrong
    what = f"timed call {i} of {samples} (fresh inputs, checked after the timing was reported) is wrong"
    return labelled(
        session, ks, idx, call_seed, f"{what}: {why}", "the work was skipped or faked while being timed"
    )


VERIFIED_BURST = 5  # of a burst's calls; a kernel skipping a third of them escapes 13 % of the time
VERIFIED_BURST_SMALL = 12  # where a set is small (HELD_BYTES): one skipping a third escapes 0.8 %


def burst_draws(session: Any, idx: int, reps: int) -> int:
    """How many of a burst's `reps` calls the parent checks. Where a call's inputs are small, checking
    one costs the parent milliseconds, and such calls are the ones a kernel can tell apart by their
    rhythm alone (back to back, microseconds apart): a loaded host spaces some of them out, so such a
    kernel skips only part of the burst, and five draws let that pass one time in eight (red team
    round 9's burst skipper, seen passing beside a busy test run)."""
    nbytes = session.set_bytes.get(idx)
    small = nbytes is not None and nbytes <= HELD_BYTES
    return min(reps, VERIFIED_BURST_SMALL if small else VERIFIED_BURST)


def verify_burst_calls(session: Any, ks: Any, idx: int, salt: int, reps: int) -> Finding | None:
    """None when the burst calls the parent chose after the burst (each on fresh set `timed_seed(salt,
    i)`, bench.burst) computed the right outputs, else the finding (as `labelled`). The burst is the parent's
    own clock on the kernel; a kernel that does its work outside the timed calls (a signal handler, a
    thread) and recognises a burst by its back-to-back calls must skip the work there to pass it, which
    leaves most of the burst's outputs wrong."""
    chosen = sorted(random.SystemRandom().sample(range(reps), burst_draws(session, idx, reps)))
    wrong = _first_wrong(session, ks, idx, chosen, salt, None, burst=True)
    if wrong is None:
        return None
    i, why, call_seed = wrong
    what = f"call {i} of the parent's timing burst of {reps} (fresh inputs, checked after the burst) is wrong"
    return labelled(
        session,
        ks,
        idx,
        call_seed,
        f"{what}: {why}",
        "the work was skipped while the harness's own clock timed the kernel",
    )


def labelled(
    session: Any, ks: Any, idx: int, seed: int, wrong: str, cheat: str, scale: float = 1.0
) -> Finding:
    """A call found wrong after the fact, labelled by the kernel's own untimed call on the same fresh
    inputs (seed, scale): right there, the kernel computes differently when timed (REWARD_HACK, `cheat`
    says how); wrong there too, it is simply wrong on those inputs (INCORRECT: a numerics-borderline
    honest kernel is no cheat). A kernel that also answers the untimed call wrongly is rejected either way."""
    untimed = untimed_call_wrong(session, ks, idx, seed, scale)
    if untimed is None:
        return "REWARD_HACK", f"{wrong}: {cheat}"
    return "INCORRECT", f"{wrong}, and so is an untimed call on the same inputs ({untimed})"


def _on_gpu(session: Any) -> bool:
    return bool(session.device.type == "cuda")


def reference_results(session: Any, idx: int, inputs: list[Any], seed: int) -> list[Any]:
    """The reference's results on `inputs` (drawn from `seed`) as the worker answers a call: its outputs,
    then the inputs it updates in place without returning them (the contract's `compared`), which are
    judged like outputs. A random reference draws with its generators seeded by `seed`, as the worker's
    call on that set was (a correctness call, or a host-timed one: Bench.use_pool)."""
    rng_seed = seed if session.contract.get("stochastic") else None
    want, _ = session.reference.outputs(idx, inputs, rng_seed=rng_seed)
    return [*want, *(inputs[j] for j in session.contract["compared"])]


def untimed_call_wrong(session: Any, ks: Any, idx: int, seed: int, scale: float) -> str | None:
    """Why the kernel's untimed call (the correctness path: the worker draws the inputs from the seed) on
    fresh inputs (seed, scale) is wrong; None when it is right or could not be judged (no answer, a
    violation, other inputs than the parent's)."""
    reply = ks.request({"cmd": "run", "wl": idx, "seeds": [[seed, scale, None]]}, session.call_timeout + 30)
    if reply is None or "error" in reply or reply.get("violations") or not reply.get("outputs"):
        return None
    inputs = session.reference.inputs(idx, seed, scale)
    if reply["digests"][0] != digest(inputs):
        return None
    want = reference_results(session, idx, inputs, seed)
    del inputs
    probe = type(ks.verdicts[idx])()
    again = partial(session.reference.inputs, idx, seed, scale)
    if session.judge_outputs(probe, list(reply["outputs"][0]), list(want), idx, "untimed call", inputs=again):
        return None
    return probe.message


def burst_inputs(
    session: Any,
    ks: Any,
    idx: int,
    timed: TimedSets | None = None,
    note: Callable[[str], None] = lambda text: None,
) -> BurstInputs | None:
    """The parent's side of a verified eager burst (plausibility.BurstInputs): the worker draws one
    fresh set per burst call from the burst's salt, and the parent checks calls it draws afterwards.
    None where a call cannot be checked after the fact: a stochastic reference (its random draws), or
    on a GPU shapes that change with the seed (no fresh values in fixed buffers). On a host such sets
    take the buffers' place, as the timed calls' do: a burst on the bench's own set alone was held
    against timed calls on sets of other sizes (red team round 25: an honest kernel REWARD_HACK where
    the bench's seed drew a set 256 times the usual one). `timed`: the sets the round's timed calls
    ran on, which a burst of larger sets is weighed against (set_scale); `note`: told when only that
    weighing cleared a burst (for the workload's result)."""
    if session.contract.get("stochastic") or (session.contract.get("layout_varies") and _on_gpu(session)):
        return None

    def stage(salt: int, reps: int) -> bool:
        msg = {"cmd": "burst_inputs", "wl": idx, "salt": salt, "reps": reps}
        reply = ks.request(msg, session.call_timeout * 20 + 60)
        return reply is not None and reply.get("sets") == reps

    return BurstInputs(
        stage,
        lambda salt, reps: verify_burst_calls(session, ks, idx, salt, reps),
        lambda salt, reps: set_scale(session, idx, timed, salt, reps),
        note,
    )


SCALE_GENERATION_S = 2.0  # the parent's draws that size a burst's sets take about this long at most
SCALE_REFERENCE_S = 4.0  # and the reference's calls that weigh their work about this long at most
MIN_SIZED_SETS = 12  # but never fewer of the burst's sets than this are sized


def set_scale(session: Any, idx: int, timed: TimedSets | None, salt: int, reps: int) -> float:
    """How many times larger the burst's sets are than those the round's timed calls ran on, in bytes or
    in the reference's own time on them, whichever is more, for an operator whose own generator decides
    what each set holds; 1.0 otherwise, or where the burst's are not larger. Asked only where the burst
    disagreed with the round's figure: a round's few timed calls may all have drawn the usual sets while
    the burst's many calls drew rare large ones too (red team round 25's bimodal batch, a long prefill on
    one seed in three at 256 times the rows: five timed calls all short one round in eight, and an honest
    kernel was called REWARD_HACK after three such rounds, round 28's clean-clone CI). Bytes alone miss a
    padded batch of fixed shapes whose valid rows follow the seed (red team round 29's h01: the same
    bytes on every seed, 0.1 ms or 27 ms of attention a call; the reference itself was REWARD_HACK in 3
    of 12 evaluations). The parent draws and times the sets itself, from the seeds it sent (the burst's:
    `timed_seed(salt, j)`), within SCALE_GENERATION_S of its generator's time and SCALE_REFERENCE_S of
    its reference's (a sample of the burst's sets beyond that); a burst of larger sets is then held
    against the round's figure scaled by their sizes. Work hidden from the timed calls still shows: it is
    missing from their figure whatever sets they drew, and the reference's time hides nothing."""
    if timed is None or timed.seed is None or timed.rotated or not session.reference.seed_may_shape:
        return 1.0
    return max(
        1.0, _bytes_ratio(session, idx, timed, salt, reps), _work_ratio(session, idx, timed, salt, reps)
    )


def _bytes_ratio(session: Any, idx: int, timed: TimedSets, salt: int, reps: int) -> float:
    """The burst's sets' mean bytes over the timed calls' (1.0, no scale, where those hold none)."""
    generation = session.reference.generation_s.get(idx) or 0.0
    sized = reps if generation <= 0 else max(MIN_SIZED_SETS, int(SCALE_GENERATION_S / generation))
    chosen = random.SystemRandom().sample(range(reps), min(sized, reps))

    def nbytes(seed: int) -> int:
        return value_bytes(session.reference.inputs(idx, seed, 1.0))  # one set alive at a time

    with span("timing.burst_sizes"):
        timed_bytes = statistics.fmean(nbytes(timed_seed(timed.seed, j)) for j in range(max(timed.count, 1)))
        burst_bytes = statistics.fmean(nbytes(timed_seed(salt, j)) for j in chosen)
    return burst_bytes / timed_bytes if timed_bytes > 0 else 1.0


def _work_ratio(session: Any, idx: int, timed: TimedSets, salt: int, reps: int) -> float:
    """The reference's mean time a call on the burst's sets over its mean on the timed calls' sets, each
    timed as the reference is on a kernel's own sets (trusted.Reference.time_on_sets); the burst's first
    sets where all of them would take more than SCALE_REFERENCE_S (its salt is fresh: they are as random
    as any). 1.0, no scale, where the reference cannot be timed so (the bytes' word then stands alone;
    a round timed at no time at all, too: it divides by zero)."""
    ref, seed = session.reference, int(timed.seed)  # type: ignore[arg-type]

    def mean_us(sets: TimedSets) -> float:
        timing = ref.time_on_sets(idx, [sets], session.l2_bytes, session.bench_seed)
        return statistics.fmean(timing.samples_us)  # (none: StatisticsError, no scale)

    with span("timing.burst_work"):
        try:
            on_timed = mean_us(TimedSets(seed, max(timed.count, 1)))
            affordable = int(SCALE_REFERENCE_S * 1e6 / on_timed)
            return mean_us(TimedSets(salt, min(reps, max(MIN_SIZED_SETS, affordable)))) / on_timed
        except Exception:  # weighing is a pardon, never a verdict: without it the burst's word stands
            return 1.0


def _first_wrong(
    session: Any, ks: Any, idx: int, chosen: list[int], seed: int, sets: int | None, burst: bool
) -> tuple[int, str, int] | None:
    """(call, why, its inputs' seed) for the first of the `chosen` calls whose kept outputs differ from
    the reference's on that call's inputs (fresh set `timed_seed(seed, i % sets)`, or `i` itself where
    `sets` is None); None when all agree or the worker was stopped (the request recorded why)."""
    msg = {"cmd": "timed_outputs", "wl": idx, "samples": chosen, **({"burst": True} if burst else {})}
    answer = ks.request(msg, session.call_timeout + 30)
    if answer is None:
        return None
    label = "burst call" if burst else "timed call"
    for n, i in enumerate(chosen):
        call_seed = timed_seed(seed, i % sets if sets else i)
        if "error" in answer:
            return i, f"its outputs could not be read back: {answer['error']['message'][:300]}", call_seed
        got = answer["outputs"][n]
        inputs = session.reference.inputs(idx, call_seed, 1.0)
        want = reference_results(session, idx, inputs, call_seed)
        del inputs  # one call's inputs alive at a time (memory.py); `want` may still hold some
        if not got:
            return i, "no outputs kept", call_seed
        probe = type(ks.verdicts[idx])()
        # every output the reference returns: a call that hands back fewer skipped work (a native
        # operator declares no outputs, so nothing else holds its calls to the count)
        again = partial(session.reference.inputs, idx, call_seed, 1.0)
        if not session.judge_outputs(probe, list(got), list(want), idx, f"{label} {i}", inputs=again):
            return i, probe.message, call_seed
        del want
    return None


HELD_BYTES = 8 << 20  # sets up to this size always get their fresh sets (a worker has 64 MiB spare)


def pool_shortfall(session: Any, idx: int, size: int, generation_s: float | None = None) -> str | None:
    """The worker reports how many fresh sets its timed calls used, and 0 means "nothing to verify":
    where the sets are small enough that memory cannot have limited them, the parent holds it to the
    number `memory.fresh_sets` gives (code in the worker that edits its reply would otherwise switch
    this check off), unless other processes hold the same GPU (gpu_neighbours.py): their memory is
    then what the worker could not use."""
    nbytes = session.set_bytes.get(idx)  # recorded when the reference's inputs were drawn
    if nbytes is None or nbytes > HELD_BYTES:
        return None  # the worker's free memory may have limited them: its count stands
    expected = fresh_sets(nbytes, SMALL_BYTES, session.device.type, generation_s)
    if size == expected:
        return None
    if session.device.type == "cuda" and gpu_neighbours.sharing(session.device):
        return None  # other processes' memory on this GPU may have limited them (round 16: 8 on one H200)
    return (
        f"the worker timed its calls on {size} fresh input sets where {expected} fit "
        f"({nbytes / 2**20:.1f} MiB each with its outputs): the report of the timed calls was edited"
    )


HELPER_CPU_NS = 20_000_000  # helpers' CPU time that is more than a stray tick or two


def outside_work(session: Any, ks: Any, before_ns: int) -> str | None:
    """Issue 13 class 4: CPU time spent in other processes of the kernel's (forked, spawned, already
    reaped) while its calls were being timed is work nobody timed. On a host only: on a GPU a compiler
    subprocess (ptxas) may legitimately run when a timed call meets a new specialisation."""
    if session.device.type == "cuda" or ks.worker is None or not ks.alive:
        return None
    used = ks.worker.helper_cpu_ns() - before_ns
    if used < HELPER_CPU_NS:
        return None
    return (
        f"other processes of the kernel used {used / 1e6:.0f} ms of CPU time while its calls were timed: "
        "work done outside the measured process (fork, spawn, a pool of workers) is work nobody times"
    )
