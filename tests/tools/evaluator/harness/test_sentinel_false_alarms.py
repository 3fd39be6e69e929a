"""The worker's checks must tell torch's own doings from a candidate's (issues 9 and 13):

- `import torch._dynamo` (torch.compile, custom ops, triton_op) wraps torch.manual_seed in torch's own
  wrapper: not a patch. A candidate's own replacement or wrapper, torch's wrapper around a candidate's
  function, or a candidate's function planted in that wrapper's cache attribute: a patch.
- A torch function or dispatch mode left active (entered at import and never exited) sees every torch
  call the harness makes: flagged after the import and after each call, and between timed calls (where
  the harness reads and writes the copies); torch.set_default_device's own
  mode, untouched and on a real device, is honest.
- The parent summarizes the worker's timing samples itself: the worker's `statistics` is the
  candidate's too (a patched median reported a fifth of the real one).
- The harness's in-place writes (poisoned outputs, fresh inputs) accept inference tensors.
- A capture that launches nothing is honest only when every result of the call is empty.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from aka_graph.tools.evaluator.harness.bench import Bench, call_has_no_work, poison_in_place_
from aka_graph.tools.evaluator.harness.guards import Sentinel, active_modes
from aka_graph.tools.evaluator.harness.inputs import random_poison_
from aka_graph.tools.evaluator.harness.runner import KernelRunner
from aka_graph.tools.evaluator.harness.timing import judge_capture, summarize, summary_mismatch
from tests.tools.evaluator.harness.test_adversarial import (
    CANDIDATES,
    CHEAT_SHAPES,
    SOL_FIXTURES,
    describe,
    run_harness,
)

REPO = Path(__file__).resolve().parents[4]

# one fresh interpreter, as a worker: the Sentinel first, then what a candidate would do
SCENARIOS = r"""
import functools, json, types, torch
from aka_graph.tools.evaluator.harness.guards import Sentinel

def replaced(found):
    return any("torch.manual_seed was replaced" in f for f in found)

out = {}
sentinel = Sentinel()
import torch._dynamo  # what torch.compile / custom_op / triton_op import
out["dynamo imported"] = sentinel.violations()
torch.manual_seed(3)  # fills the wrapper's cache attribute on the original
out["dynamo wrapper called"] = sentinel.violations()
wrapped = torch.manual_seed

@functools.wraps(wrapped)
def own(seed):
    return wrapped(seed)

torch.manual_seed = own
out["own wrapper"] = replaced(sentinel.violations())
torch.manual_seed = torch._disable_dynamo(own)
out["torch's wrapper around its own"] = replaced(sentinel.violations())
torch.manual_seed = lambda seed: None
out["own function"] = replaced(sentinel.violations())
original = wrapped.__wrapped__
forged = types.FunctionType(own.__code__.replace(co_filename=torch._compile.__file__), globals(), "inner",
                            closure=own.__closure__)
forged.__wrapped__ = original
torch.manual_seed = forged
out["own code under torch's file name"] = replaced(sentinel.violations())
borrowed = types.FunctionType(wrapped.__code__, {**vars(torch._compile), "getattr": lambda *a: own},
                              "inner", closure=wrapped.__closure__)
borrowed.__wrapped__ = original
torch.manual_seed = borrowed
out["torch's code over its own globals"] = replaced(sentinel.violations())
torch.manual_seed = wrapped
out["restored"] = sentinel.violations()
wrapped.__wrapped__.__dynamo_disable = own
out["own function in the wrapper's cache"] = replaced(sentinel.violations())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        # set in the worker's environment (worker_proc.worker_env); torch would set it on first use
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path_factory.mktemp("inductor")),
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCENARIOS], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_torch_dynamo_wrapping_manual_seed_is_not_a_patch(scenarios: dict[str, object]) -> None:
    assert scenarios["dynamo imported"] == []
    assert scenarios["dynamo wrapper called"] == []
    assert scenarios["restored"] == []


@pytest.mark.parametrize(
    "cheat",
    [
        "own wrapper",
        "torch's wrapper around its own",
        "own function",
        "own function in the wrapper's cache",
        "own code under torch's file name",
        "torch's code over its own globals",
    ],
)
def test_a_candidate_s_manual_seed_is_still_a_patch(scenarios: dict[str, object], cheat: str) -> None:
    assert scenarios[cheat] is True


class _Passthrough(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


class _PassthroughDispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(
    ("mode", "words"),
    [(_Passthrough, "torch function mode _Passthrough"), (_PassthroughDispatch, "dispatch mode")],
)
def test_a_mode_left_active_is_flagged_and_gone_once_exited(mode: type, words: str) -> None:
    sentinel = Sentinel()
    assert sentinel.violations() == []
    entered = mode()
    entered.__enter__()
    try:
        found = sentinel.violations()
    finally:
        entered.__exit__(None, None, None)
    assert any(words in f and "left active" in f for f in found), found
    assert sentinel.violations() == [] and active_modes() == []


def test_a_mode_held_only_between_timed_calls_is_flagged_by_the_bench() -> None:
    """Entered at the end of each call and exited at the start of the next: never active when the round's
    last check looks, but active while the harness keeps and perturbs between timed calls."""
    held: list[TorchFunctionMode] = []

    def toggling(x: torch.Tensor, out: torch.Tensor) -> None:
        while held:
            held.pop().__exit__(None, None, None)
        torch.mul(x, 2.0, out=out)
        mode = _Passthrough()
        mode.__enter__()
        held.append(mode)

    cpu = torch.device("cpu")
    try:
        bench = Bench(KernelRunner(toggling, True, [((64,), torch.float32)], cpu), [torch.randn(64)], cpu, 0)
        assert bench.violations == []  # the set-up call entered it, nothing of the harness's ran since
        bench.perturb(1)
        assert any("_Passthrough left active" in v for v in bench.violations), bench.violations
    finally:
        while held:
            held.pop().__exit__(None, None, None)
    assert active_modes() == []


def test_torch_s_own_default_device_mode_is_honest_a_disguised_one_is_not() -> None:
    from torch.utils._device import DeviceContext

    sentinel = Sentinel()
    torch.set_default_device("cpu")  # what an honest kernel may do at import: torch's DeviceContext
    try:
        assert sentinel.violations() == []
    finally:
        torch.set_default_device(None)

    class Sub(DeviceContext):  # the red team's disguise: torch's class, its hook replaced
        __torch_function__ = _Passthrough.__torch_function__

    for disguised in (Sub("cpu"), DeviceContext("meta")):
        with disguised:
            found = sentinel.violations()
        assert any("left active" in f for f in found), (disguised, found)
    real = vars(DeviceContext)["__torch_function__"]
    DeviceContext.__torch_function__ = _Passthrough.__torch_function__  # type: ignore[method-assign]
    try:
        with DeviceContext("cpu"):
            found = sentinel.violations()
    finally:
        DeviceContext.__torch_function__ = real  # type: ignore[method-assign]
    assert any("DeviceContext left active" in f for f in found), found


def test_the_parent_recomputes_the_median_a_patched_statistics_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    samples = [10.0, 11.0, 12.0, 13.0, 50.0]
    honest = summarize(samples)
    assert summary_mismatch(samples, *honest) is None
    real = statistics.median
    monkeypatch.setattr(statistics, "median", lambda data: real(data) / 5)  # the worker-side cheat
    faked = summarize(samples)
    monkeypatch.undo()
    assert faked[0] == pytest.approx(honest[0] / 5)
    found = summary_mismatch(samples, *faked)
    assert found is not None and "tampered" in found
    assert summary_mismatch(samples, honest[0], honest[1] / 2) is not None  # a faked spread too
    assert summary_mismatch([], 1.0, 0.0) is not None


def test_poisoning_an_inference_tensor_works_where_a_plain_write_fails() -> None:
    with torch.inference_mode():
        out = torch.zeros(4, 8)
    assert out.is_inference()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        random_poison_(out)  # what re-validation did to a captured graph's returned outputs
    poison_in_place_(out)
    assert not torch.equal(out, torch.zeros(4, 8))
    plain = torch.zeros(3)
    poison_in_place_(plain)
    assert not plain.is_inference() and not torch.equal(plain, torch.zeros(3))


def test_an_empty_capture_is_honest_only_when_the_call_has_no_results() -> None:
    assert judge_capture(0, 2048, no_work=True) is None
    assert "captured no kernels" in (judge_capture(0, 2048) or "")
    assert "real work only on the first calls" in (judge_capture(3, 2048) or "")


def test_a_call_has_no_work_when_its_outputs_are_empty_and_nothing_is_left_to_update() -> None:
    """Round 8 on the H200: a KV-cache write at an empty serving step (T = 0) captured no kernels, as the
    reference does, and was REWARD_HACK because the cache it updates in place is not empty."""
    empty_norms, keys, slots = torch.empty(0, 4), torch.empty(0, 4, 32), torch.empty(0)
    cache = torch.ones(64, 4, 32)
    assert call_has_no_work([empty_norms], [keys, cache, slots], mutated=[1])
    assert call_has_no_work([torch.empty(0)], [torch.empty(0)], mutated=[])  # an empty batch
    # work remains: an output with elements, or an in-place update driven by non-empty inputs only
    assert not call_has_no_work([torch.ones(3)], [torch.empty(0)], mutated=[])
    assert not call_has_no_work([empty_norms], [torch.ones(2, 4, 32), cache, torch.ones(2)], mutated=[1])
    assert not call_has_no_work([empty_norms], [cache], mutated=[0])  # x.add_(1) and an empty output
    assert not call_has_no_work([], [torch.empty(0)], mutated=[])  # no outputs at all: nothing to judge by


# -- through the whole harness, the static policy off (its rules would reject them first) ------------------


@pytest.mark.slow
@pytest.mark.parametrize("candidate", ["redteam_function_mode", "redteam_mode_via_device_context"])
def test_a_mode_left_active_is_caught_behind_the_policy(candidate: str, tmp_path: Path) -> None:
    result = run_harness(
        tmp_path,
        SOL_FIXTURES / "rmsnorm",
        CANDIDATES / candidate,
        CHEAT_SHAPES,
        timeout_s=280,
        extra_args=("--no-source-policy",),
    )
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "left active" in result["message"] + str(result["workloads"]), describe(result)
