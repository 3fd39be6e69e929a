"""The parent's burst check runs the kernel on inputs it has never seen (issue 13).

The burst is the parent's own clock on the timed invocation. Before 870458c each burst repeated the same
perturbed values (and a report far below the estimate asks for three bursts, the fastest counting), so a
kernel with a cache keyed on input values computed in the first burst and answered the next two from its
cache: the fastest burst then agreed with a faked, too-small latency. Now every burst's perturbation moves
by a salt the parent draws from os.urandom after the timed calls. These tests drive the real parent check
(`plausibility.check`) through the worker's real burst handler into a real Bench.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.plausibility import HOST_TOLERANCE, check
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.worker import Worker

CPU = torch.device("cpu")


def _value_cache_bench(seen: dict[tuple[float, ...], int], dtype: torch.dtype = torch.float32) -> Bench:
    """A kernel that remembers every input it was called on, as a value-keyed cache would."""

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        key = tuple(x.tolist())
        seen[key] = seen.get(key, 0) + 1
        for _ in range(30):  # a call that costs far more than the perturbation the twin burst subtracts:
            out.copy_(x * 2)  # on a busy host the difference of the two never reads as free

    return Bench(KernelRunner(kernel, True, [((64,), dtype)], CPU), [torch.randn(64, dtype=dtype)], CPU, 0)


def _request(bench: Bench) -> Any:
    handler = SimpleNamespace(benches={0: bench})  # the worker's own burst handler, on this bench
    return lambda msg: Worker.burst(handler, msg)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_no_burst_call_repeats_the_inputs_of_an_earlier_call(dtype: torch.dtype) -> None:
    """Exactly none, in every dtype: on the H200 one set of ~3000 repeated (a fixed grid of scales,
    1 + a/64 times 1 + b/2048, has equal products), and bf16 cannot tell most of those scales apart."""
    seen: dict[tuple[float, ...], int] = {}
    bench = _value_cache_bench(seen, dtype)
    for i in range(5):  # the timed calls, as host timing runs them (perturbation, then the call)
        bench.perturb(i)
        bench.call(0)
    before = dict(seen)
    # a report of ~0 us: the longest burst, judged implausible, so every one of the bursts runs
    # (the bench runs in this process: its CPU clock, as the parent reads the worker's, keeps a busy host's
    # wall-clock spikes from reading one burst as free, which ended the check early on a loaded CI machine)
    clock = time.process_time_ns
    found = check(_request(bench), 0, 1e-3, 1, (0, 0), HOST_TOLERANCE, cpu=clock, prepared=True)
    assert found is not None and found[0] == "REWARD_HACK"
    burst_calls = sum(seen.values()) - sum(before.values())
    assert burst_calls >= 2 * 1000  # at least two bursts of MAX_REPS calls ran
    repeated = {k: n for k, n in seen.items() if n > 1}
    assert not repeated, f"{len(repeated)} input sets were seen more than once: a cache answers the burst"


def test_an_honest_kernel_still_passes_the_burst_on_fresh_values() -> None:
    bench = _value_cache_bench({})
    assert check(_request(bench), 0, 1e6, 1, (0, None), HOST_TOLERANCE, prepared=True) is None
