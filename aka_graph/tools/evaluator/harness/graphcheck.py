"""After-the-fact verification of a timed CUDA graph's rotated copies by the trusted parent (issue 13,
class 1, the graph path).

A graph times `calls` invocations rotating over n input/output copies. The copies used to be n identical
replicas of one input set, so a kernel could compute copy 0 for real and, inside the capture, merely copy
that answer into every other copy (a kernel per call, so the capture's kernel count looked right):
re-validation writes one fresh set into the two copies it checks, and copying copy 0's answer into the
last copy was right there. Now the worker writes a fresh timed set into every copy before the graph is
timed (`timed_seed(pool_seed, k)` for copy k, the seed drawn by the parent for the round), and only after
the timing is reported does the parent draw which copies to check, regenerate their inputs, run the
reference and compare with what the replays left in those copies.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from .timing import timed_seed

VERIFIED_COPIES = 5  # a kernel that answers only k of n copies for real escapes with ~ (k/n)^5


def choose_copies(n: int, skip: list[int], rng: random.Random | None = None) -> list[int]:
    """Which copies to verify, drawn from os.urandom after the timing was reported; `skip`: the copies
    re-validation rewrote with its own inputs."""
    rng = rng or random.SystemRandom()
    pool = [k for k in range(n) if k not in set(skip)]
    return sorted(rng.sample(pool, min(VERIFIED_COPIES, len(pool))))


def verify_graph_copies(session: Any, ks: Any, idx: int, reply: dict[str, Any], pool_seed: int) -> str | None:
    """None when the chosen copies hold the right outputs for their fresh inputs, else the REWARD_HACK
    message. Skipped for operators that update inputs in place (a copy is called several times per
    replay) and stochastic references (an unseeded call's draws cannot match)."""
    n = int(reply.get("graph_fresh") or 0)
    contract = session.contract
    if reply.get("method") != "cuda_graph" or n <= 0 or contract.get("mutated") or contract.get("stochastic"):
        return None
    chosen = choose_copies(n, [int(k) for k in reply.get("reval_copies") or []])
    if not chosen:
        return None
    msg = {"cmd": "timed_outputs", "wl": idx, "samples": chosen, "copies": True}
    answer = ks.request(msg, session.call_timeout + 30)
    if answer is None:
        return None  # the request recorded why the worker was stopped
    if "error" in answer:
        return f"the timed copies' outputs could not be read back: {answer['error']['message'][:300]}"
    # a Python scalar input is the capture's (the bench's own inputs); tensors are dropped at once
    scalars = [
        None if hasattr(v, "shape") else v for v in session.reference.inputs(idx, session.bench_seed, 1.0)
    ]
    for k, got in zip(chosen, answer["outputs"], strict=True):
        if not got:
            return f"timed copy {k}: no outputs"
        inputs = copy_inputs(session, idx, timed_seed(pool_seed, k), scalars)
        want = list(session.reference.outputs(idx, inputs)[0])  # all of them (spotcheck.py says why)
        del inputs  # one copy's inputs alive at a time (large workloads)
        probe = type(ks.verdicts[idx])()
        again = partial(copy_inputs, session, idx, timed_seed(pool_seed, k), scalars)
        if not session.judge_outputs(probe, list(got), want, idx, f"timed copy {k}", inputs=again):
            return (
                f"copy {k} of the {n} rotated copies of the timed CUDA graph (fresh inputs, checked after "
                f"the timing was reported) is wrong: {probe.message}: the graph skipped or faked work on "
                "the copies it was timed on"
            )
    return None


def copy_inputs(session: Any, idx: int, seed: int, scalars: list[Any]) -> list[Any]:
    """A timed copy's inputs: fresh tensors drawn from `seed`, Python scalars the capture's (`scalars`)."""
    fresh = session.reference.inputs(idx, seed, 1.0)
    return [f if hasattr(f, "shape") else c for f, c in zip(fresh, scalars, strict=True)]
