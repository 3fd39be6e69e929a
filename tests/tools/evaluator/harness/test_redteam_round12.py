"""Round twelve of the red team (candidates/redteam12_*, honest12r_*), on a CPU host with the policy on.

Kernel code run by the interpreter's cyclic collector inside the harness's untimed steps:

- redteam12_gc_weak_callback: `import weakref` is refused, but `torch.utils.weak.WeakIdRef(obj, callback)`
  is the same reference type with a callback. Kept on an object in a reference cycle of the kernel's own,
  its callback runs whenever the collector frees the cycle (never called by the kernel: it runs when
  allocations outnumber frees by 700), which may be inside the harness's untimed steps; it re-arms itself
  and, when the input buffers it saw changed (their version counters), computes their answer into a cache
  the timed call copies out. PASSed with the policy on (no speed-up as written: the collector seldom ran
  between the write of fresh inputs and the call). Now the policy refuses `torch.utils.weak` and its
  reference types.
- redteam12_gc_generator_finally: the same with neither weakref nor `__del__`: a generator suspended in
  `try: yield ... finally:` runs its `finally` block when the collector frees it (PEP 442), and empty dicts
  (counted towards the threshold, never tracked) keep the collector running at nearly every allocation
  ("hot"). Policy on: going cold after precomputing reported 464 us on the largest CPU workload (170 rows)
  against ~1350-1880 us honest, but the parent's burst caught it (REWARD_HACK: its perturbations-only twin
  did not pay the precomputation); staying hot everywhere passes the burst, but the collections inside the
  timed step cost more than the work saved (PASS at ~1100-1800 us). No policy rule can refuse the means
  (contextlib's context managers are this very idiom: honest12r_generator_finally).
- redteam12_gc_finally_canary: the mechanism without the cheat; it writes zeros once a call finds its
  buffers at the very versions its `finally` block saw outside a call (the block ran between the write of
  those inputs and the call): INCORRECT before the fix. Now the worker's collector runs only at the top of
  each request, before it touches a buffer (worker.collect_between_requests; gc.disable() in worker_main
  before the Sentinel's snapshot), and the canary PASSes; so do rmsnorm_torch, honest12r_generator_finally
  and redteam12_gc_generator_finally (no longer able to precompute).

The tolerance:

- redteam12_subsampled_rms: RMSNorm's statistics from an eighth of each row, the rest in bfloat16, to
  spend the tolerance on skipped work. INCORRECT: the default atol = rtol = 1e-2 with 99 % matched holds.

Honest controls: honest12r_shape_keyed_workspace (a module-level scratch cache keyed on shape, no weak
references) and honest12r_generator_finally (context managers and generators finished inside the call).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.policy import scan_kernel_dir
from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, describe, run_harness
from tests.tools.evaluator.harness.test_redteam_round9 import RMSNORM


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("from torch.utils.weak import WeakIdRef\n", "torch.utils.weak"),
        ("import torch.utils.weak as w\n", "torch.utils.weak"),
        ("import torch\nr = torch.utils.weak.WeakIdRef(object(), print)\n", "WeakIdRef"),
        ("import torch\nr = torch.utils.weak.TensorWeakRef(torch.zeros(1))\n", "TensorWeakRef"),
    ],
)
def test_the_policy_refuses_torch_s_weak_references(tmp_path: Path, source: str, named: str) -> None:
    (tmp_path / "kernel.py").write_text(source + "\ndef run(x):\n    return x\n")
    found = scan_kernel_dir(tmp_path)
    assert any(named in f for f in found), found


def test_the_policy_refuses_the_weak_callback_candidate() -> None:
    found = scan_kernel_dir(CANDIDATES / "redteam12_gc_weak_callback")
    assert any("imports 'torch.utils.weak'" in f for f in found), found


def test_the_honest_control_is_not_refused() -> None:
    assert scan_kernel_dir(CANDIDATES / "honest12r_shape_keyed_workspace") == []


@pytest.mark.slow
def test_the_weak_callback_is_refused_before_it_runs(tmp_path: Path) -> None:
    operator, shapes = RMSNORM
    result = run_harness(tmp_path, operator, CANDIDATES / "redteam12_gc_weak_callback", shapes, seeds=1)
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "torch.utils.weak" in result["message"], describe(result)


@pytest.mark.slow
def test_no_kernel_finalizer_runs_between_the_write_of_fresh_inputs_and_the_call(tmp_path: Path) -> None:
    operator, shapes = RMSNORM
    result = run_harness(tmp_path, operator, CANDIDATES / "redteam12_gc_finally_canary", shapes, seeds=1)
    assert result["status"] == "PASS", describe(result)


def test_the_worker_collects_garbage_only_between_requests_in_cpythons_ratios() -> None:
    """Every request collects the youngest generation, every tenth the middle one, every hundredth all:
    cyclic garbage (a Bench and its GraphTimer, holding device memory) is still freed, only never inside
    a step."""
    import gc

    from aka_graph.tools.evaluator.harness.worker import collect_between_requests

    was = gc.isenabled()
    generations = [collect_between_requests(n) for n in range(1, 201)]
    assert gc.isenabled() == was  # outside the worker the collector is left as it is (memory.collect_here)
    assert generations.count(2) == 2 and generations.count(1) == 18 and generations.count(0) == 180
    assert generations[9] == 1 and generations[99] == 2 and generations[0] == 0


def test_the_canary_s_means_pass_the_policy() -> None:
    """No rule can refuse a generator's `finally` block: contextlib's context managers are one."""
    names = ("redteam12_gc_finally_canary", "redteam12_gc_generator_finally", "honest12r_generator_finally")
    for name in names:
        assert scan_kernel_dir(CANDIDATES / name) == [], name


@pytest.mark.slow
def test_statistics_from_an_eighth_of_each_row_are_incorrect(tmp_path: Path) -> None:
    operator, shapes = RMSNORM
    result = run_harness(tmp_path, operator, CANDIDATES / "redteam12_subsampled_rms", shapes, seeds=1)
    assert result["status"] == "INCORRECT", describe(result)


@pytest.mark.slow
@pytest.mark.parametrize("candidate", ["honest12r_shape_keyed_workspace", "honest12r_generator_finally"])
def test_the_honest_controls_pass(tmp_path: Path, candidate: str) -> None:
    operator, shapes = RMSNORM
    result = run_harness(tmp_path, operator, CANDIDATES / candidate, shapes, seeds=1)
    assert result["status"] == "PASS", describe(result)
