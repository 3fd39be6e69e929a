"""Red team, round eight: the outputs of timed calls (candidates/redteam8_*, honest8_*).

- redteam8_drop_second_output: a native operator (tests/fixtures/native_two_outputs) whose Model returns
  two outputs and, being native, declares none, so nothing holds a call to the count. The cheat returns
  both on the first calls of each workload (correctness seeds, the bench's first call) and on everything
  after the timed calls, and only the first output on the timed calls. The parent's after-the-fact check
  of timed calls compared `want[:len(got)]`: as many outputs as the call handed back. It PASSed when
  found; the check now compares every output the reference returns (spotcheck.py, graphcheck.py).
- redteam8_skip_cache_write (found by the round-8 false-alarm hunt): a paged KV-cache write whose
  workloads include an empty serving step (T = 0). The reference's in-place contract was probed on the
  smallest workload, that empty step, where the reference writes nothing: the cache was not compared, a
  candidate that never writes it PASSed, and an honest one that does was called REWARD_HACK ("input 1 was
  modified"). A dropout operator with an empty batch was judged not random the same way, and its own
  reference was then REWARD_HACK on re-validation. The contract is now probed on the smallest workload
  without an empty tensor (session.py, subset.has_empty_tensor).
- redteam8_sigalrm_* (the round-8 red team): a SIGALRM handler, armed with setitimer, runs the call's work
  while the worker idles between the parent's steps or while the harness writes the next inputs (its
  untimed perturbation), and skips burst calls it recognises from the call pattern. Every checked output
  was right; the timed calls cost nothing: 10-100x fake speed-ups, one reported 0.0 us and PASSed. The
  signal module was reached as `torch.utils.data._utils.signal_handling.signal` (`signal` is left out of
  the policy's foreign modules for torch.signal). Now: the policy bans reaching `signal` through any
  module but torch and bans arming timers or sending signals by name, and behind it the parent reads the
  worker's caught signals from /proc after every reply (proctree.caught_signals).
- redteam8b_raw_thread (a second red-team pass): the same precomputing, by a thread telnetlib's
  `mt_interact` starts through `_thread` (never listed by `threading.enumerate()`, which the worker's
  "threads left running" check reads): PASSed at 100-445 us against an honest 480-1270 us with the policy
  on. Now: telnetlib/execnet and the raw-thread starters are banned, and on a host the parent counts the
  worker's OS threads (/proc/<pid>/task) after every reply against those it had before the kernel loaded
  (session.KernelState.request).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, SOL_FIXTURES, describe, run_harness

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
TWO_OUTPUTS = FIXTURES / "native_two_outputs"
KV_CACHE = FIXTURES / "sol" / "r8_kv_cache_empty_step"
DROPOUT = FIXTURES / "sol" / "r8_dropout_empty_batch"
SWIGLU = FIXTURES.parents[1] / "aka_graph" / "examples" / "swiglu_native"
BATCH_170 = ["b010c7f2-801d-41c0-b5d0-be619ecb4090"]  # a call of a few hundred us


@pytest.mark.slow
def test_a_timed_call_that_returns_fewer_outputs_is_caught(tmp_path: Path) -> None:
    result = run_harness(tmp_path, TWO_OUTPUTS, CANDIDATES / "redteam8_drop_second_output", None)
    assert result["status"] == "REWARD_HACK", describe(result)
    # the timed calls' check, or re-validation when its randomly placed call falls in the cheat's window
    assert "1 outputs, expected 2" in result["message"], describe(result)


@pytest.mark.slow
def test_the_honest_two_output_model_passes(tmp_path: Path) -> None:
    result = run_harness(tmp_path, TWO_OUTPUTS, CANDIDATES / "honest8_two_outputs", None)
    assert result["status"] == "PASS", describe(result)
    assert all(w["status"] == "PASS" for w in result["workloads"]), describe(result)


@pytest.mark.slow
def test_a_skipped_cache_write_is_caught_though_the_smallest_workload_is_an_empty_step(
    tmp_path: Path,
) -> None:
    result = run_harness(tmp_path, KV_CACHE, CANDIDATES / "redteam8_skip_cache_write", None)
    assert result["status"] == "INCORRECT", describe(result)
    assert "key_cache (updated in place)" in result["message"], describe(result)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("operator", "candidate"),
    [(KV_CACHE, "honest8_kv_cache_index_copy"), (DROPOUT, "honest8_dropout_reference")],
)
def test_operators_with_an_empty_workload_pass_honest_kernels(
    tmp_path: Path, operator: Path, candidate: str
) -> None:
    result = run_harness(tmp_path, operator, CANDIDATES / candidate, None)
    assert result["status"] == "PASS", describe(result)
    assert len(result["workloads"]) == 3 and all(w["status"] == "PASS" for w in result["workloads"])


@pytest.mark.slow
def test_a_numpy_scalar_output_is_taken_as_its_value(tmp_path: Path) -> None:
    """SOL's normalize_outputs takes a numpy scalar like any number; it was REWARD_HACK ("output 0 is a
    numpy.float64, not a plain torch.Tensor"). runner.KernelRunner._normalized now turns numpy's own
    scalar types (exact types: a subclass stays for the guards) into the Python value."""
    result = run_harness(
        tmp_path, FIXTURES / "sol" / "scalar_output", CANDIDATES / "honest8_numpy_scalar_output", None
    )
    assert result["status"] == "PASS", describe(result)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("operator", "candidate"),
    [("r8_argmax_ties", "honest8_streaming_argmax"), ("r8_threshold_mask", "honest8_mask_fused_epilogue")],
)
def test_discrete_outputs_with_a_few_honest_flips_pass(tmp_path: Path, operator: str, candidate: str) -> None:
    """A mask from an fp32 accumulator where the reference rounded to bf16 first (15 of 32768 flipped), an
    arg-max breaking fp16 ties per tile (8 of 2048 rows): INCORRECT "off by more than 16x their
    tolerance" when found, since one flipped unit is far beyond a float tolerance. Discrete outputs are
    now judged by the ratio and the structure only (numerics.check_output)."""
    result = run_harness(tmp_path, FIXTURES / "sol" / operator, CANDIDATES / candidate, None)
    assert result["status"] == "PASS", describe(result)


@pytest.mark.slow
@pytest.mark.parametrize(
    "candidate",
    ["redteam8_sigalrm_precompute", "redteam8_sigalrm_prepare_phase", "redteam8_sigalrm_native_swiglu"],
)
@pytest.mark.parametrize("policy", ["on", "off"])
def test_work_done_by_a_timer_signal_handler_is_caught_in_front_of_and_behind_the_policy(
    tmp_path: Path, candidate: str, policy: str
) -> None:
    native = candidate.endswith("native_swiglu")
    operator = SWIGLU if native else SOL_FIXTURES / "rmsnorm"
    shapes = ["t300_i2816"] if native else BATCH_170
    extra = () if policy == "on" else ("--no-source-policy",)
    result = run_harness(tmp_path, operator, CANDIDATES / candidate, shapes, extra_args=extra, timeout_s=400)
    assert result["status"] == "REWARD_HACK", describe(result)
    expected = "reaches the module 'signal'" if policy == "on" else "catches SIGALRM"
    assert expected in result["message"], describe(result)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["on", "off"])
def test_work_on_a_thread_threading_never_lists_is_caught(tmp_path: Path, policy: str) -> None:
    extra = () if policy == "on" else ("--no-source-policy",)
    result = run_harness(
        tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "redteam8b_raw_thread", BATCH_170, extra_args=extra
    )
    assert result["status"] == "REWARD_HACK", describe(result)
    expected = "imports 'telnetlib'" if policy == "on" else "OS thread(s) of its own"
    assert expected in result["message"], describe(result)


@pytest.mark.slow
def test_a_value_returning_kernel_without_the_flag_is_told_how_to_declare_it(tmp_path: Path) -> None:
    """The documented default is destination-passing; SOL's own references return their outputs, and a
    kernel written that way failed with a bare "run() takes 2 positional arguments but 3 were given"."""
    result = run_harness(
        tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "honest8_value_return_no_flag", BATCH_170
    )
    assert result["status"] == "RUNTIME_ERROR", describe(result)
    assert "DESTINATION_PASSING_STYLE = False" in result["message"], describe(result)
