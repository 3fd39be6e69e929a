"""GPU: the parent's burst check runs the CUDA-event fallback on inputs it has never seen (issue 13).

A kernel that reads its input values on the host cannot be captured, so it is timed eagerly (CUDA events)
and its latency is the worker's report: the parent's burst is the only clock on it. Each burst must be on
values no earlier call saw, or a value-keyed cache answers the fastest burst and agrees with a fake.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from aka_graph.tools.evaluator.harness.bench import Bench
from aka_graph.tools.evaluator.harness.plausibility import EVENT_TOLERANCE, check
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.worker import Worker

pytestmark = pytest.mark.gpu


def test_event_fallback_bursts_never_repeat_an_earlier_calls_inputs() -> None:
    cuda = torch.device("cuda")
    seen: dict[tuple[float, ...], int] = {}

    def kernel(x: torch.Tensor, out: torch.Tensor) -> None:
        key = tuple(x.tolist())  # a host read: uncapturable, so the bench times it eagerly
        seen[key] = seen.get(key, 0) + 1
        out.copy_(x * 2)

    bench = Bench(KernelRunner(kernel, True, [((64,), torch.float32)], cuda), [torch.randn(64, device=cuda)],
                  cuda, 0)
    assert bench.graph is None, "the host read should have made the call uncapturable"
    before = dict(seen)  # the bench's own set-up calls (capture attempt, warm-up) on its pristine inputs
    handler = SimpleNamespace(benches={0: bench})
    found = check(lambda msg: Worker.burst(handler, msg), 0, 1e-3, 1, (0, None), EVENT_TOLERANCE,
                  prepared=True)
    assert found is not None and found[0] == "REWARD_HACK"  # a ~0 us report: every burst ran
    in_bursts = {k: n - before.get(k, 0) for k, n in seen.items() if n > before.get(k, 0)}
    assert sum(in_bursts.values()) >= 2 * 1000  # at least two bursts of MAX_REPS calls ran
    # a burst call on a set seen before (set-up, an earlier burst call) is one a cache could answer
    repeated = {k: n for k, n in in_bursts.items() if seen[k] > 1}
    assert not repeated, f"{len(repeated)} input sets of burst calls were seen before: a cache answers them"
