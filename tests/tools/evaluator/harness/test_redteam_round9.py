"""Red team, round nine (candidates/redteam9_*): work moved out of the timed call, and the burst.

- redteam9_burst_skipper: an rmsnorm that computes every call the harness checks and skips every call of
  the parent's timing burst, told from the call pattern (back-to-back calls). This was the enabler of
  round 8's cheats: work moved out of the timed calls (a SIGALRM handler, a hidden thread) shows in the
  burst, the parent's own clock, unless the burst's calls skip it, and nothing checked a burst's outputs.
  Now an eager burst runs on fresh input sets drawn from the burst's salt, keeps every call's outputs,
  and the parent compares calls it draws afterwards with the reference (spotcheck.verify_burst_calls).

With the burst checked, the red team moved the work to where the harness itself runs it, untimed, and
so does the burst's perturbations-only twin (whose cost the parent subtracts). All PASSed with the policy
on, 5x to over 500x faster than the honest kernels, every checked output right:

- redteam9_lazy_detach / _native_lazy_detach: the timed call plants an instance attribute `detach` on
  the output (a method on the instance wins over torch.Tensor's), through a static method whose first
  parameter the policy trusted as `self`; the harness's untimed read of the output (`o.detach()`) ran the
  work. redteam9_wraps_namespace / _native_wraps_namespace: the same plant without an assignment,
  `functools.wraps(Class)(out)` (its `__dict__.update`). Now: the harness reads through torch's own
  methods and removes (and reports) attributes that shadow torch.Tensor's before touching a tensor
  (guards.planted_members); the policy trusts no static method's first parameter and refuses `wraps`
  other than as a decorator.
- redteam9_format_field_gc / _rmsnorm: `string.Formatter().get_field` reaches `__import__` by a string
  path; `gc.set_threshold(1, ...)` and a `gc.callbacks` hook then precompute at every harness allocation
  after new inputs are written. Now: the worker's sentinel compares the interpreter's hooks (gc callbacks
  and thresholds, profile and trace functions) with their values before the kernel loaded; the policy
  refuses the Formatter route.
- redteam9_cpp_sigusr_timer: a C++ extension's POSIX timer delivers SIGUSR2 to a C handler that computes
  while the worker waits for the parent's next step (no thread, and not one of the timer signals the
  parent looked for). Now: the parent counts the worker's POSIX timers against those it held before the
  kernel loaded (proctree.posix_timers: a timer is what raises the signal; a handler alone is no trigger,
  and an honest Triton compile on the H200 made LLVM catch SIGUSR2 and seven more), and descriptors set to
  signal on I/O; the native-source policy refuses signal and timer APIs.
- The second pass (9b), behind the policy: redteam9b_aten_copy_hook / _cpp_aten_copy_impl /
  _native_inline_copy_impl register the kernel's own aten::copy_ (Python, a C++ extension, load_inline)
  so the harness's own copies compute; redteam9b_cpp_sig33_asm arms a POSIX timer by raw syscalls aimed
  at glibc's signal 33, which the signal check leaves alone; redteam9b_audit_rearmed_gc hides the gc
  callback from the sentinel with an audit hook. Now: the dispatch tables of the aten ops the harness
  runs are compared before every untimed step (guards.WATCHED_OPS), the parent counts the worker's
  POSIX timers (proctree.posix_timers), the worker refuses audit hooks, and the interpreter's hooks are
  compared before every untimed step too. redteam9b_segv_guard_pages (mprotect + a SIGSEGV handler) is
  refused by the policy (ctypes); behind it (round 10) the worker names a fatal signal's handler whose
  code is the kernel's own (faults.py: a ctypes callback in anonymous memory).
- redteam9_gc_stepper_native (near miss, kept): a generator's `finally`, freed by the collector, steps
  the kernel's code between harness allocations with no banned name; each step costs more than it saves,
  so it ends slower than honest.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, SOL_FIXTURES, describe, run_harness

BATCH_170 = ["b010c7f2-801d-41c0-b5d0-be619ecb4090"]  # a call of a few hundred us
BATCH_7 = ["33bf737d-3b37-4e38-be80-ea39b4b46ae6"]  # a burst writes its next inputs in microseconds


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["on", "off"])
def test_a_kernel_that_skips_the_parents_burst_is_caught_by_the_bursts_outputs(
    tmp_path: Path, policy: str
) -> None:
    extra = () if policy == "on" else ("--no-source-policy",)
    result = run_harness(
        tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "redteam9_burst_skipper", BATCH_7, extra_args=extra
    )
    assert result["status"] == "REWARD_HACK", describe(result)
    # (on a loaded host a timed call may come back to back too: the cheat skips it, the timed calls' check
    # finds it; a burst's calls, microseconds apart, are the ones it skips every time)
    assert "of the parent's timing burst" in result["message"] or "timed call" in result["message"], describe(
        result
    )


EXAMPLES = Path(__file__).resolve().parents[4] / "aka_graph" / "examples"
RMSNORM = (EXAMPLES / "rmsnorm", ["5a6f1a80-630c-5645-941e-054f07e7c7d0"])  # 257 x 4096
SWIGLU = (EXAMPLES / "swiglu_native", ["t300_i2816"])
# candidate -> (operator, workloads, what the runtime checks alone name: the policy off)
BEHIND_THE_POLICY = {
    "redteam9_lazy_detach": (*RMSNORM, "on a tensor the harness reads"),
    "redteam9_native_lazy_detach": (*SWIGLU, "on a tensor the harness reads"),
    "redteam9_wraps_namespace": (*RMSNORM, "on a tensor the harness reads"),
    "redteam9_native_wraps_namespace": (*SWIGLU, "on a tensor the harness reads"),
    "redteam9_format_field_gc": (*SWIGLU, "gc.callbacks was changed"),
    "redteam9_format_field_gc_rmsnorm": (*RMSNORM, "gc.callbacks was changed"),
    "redteam9_cpp_sigusr_timer": (*RMSNORM, "the signal of 1 POSIX timer(s) of its own"),
    # the second pass (9b): the harness's own aten ops, glibc's signal 33, an audit hook
    "redteam9b_aten_copy_hook": (*RMSNORM, "torch's dispatch of aten::copy_ was changed"),
    "redteam9b_cpp_aten_copy_impl": (*RMSNORM, "torch's dispatch of aten::copy_ was changed"),
    # since round 15 the worker reads the C++ as load_inline would build it and refuses its registration
    # before it is compiled (native_builds.py), ahead of the dispatch-table check
    "redteam9b_native_inline_copy_impl": (*SWIGLU, "built C++ the scan refuses at run time"),
    "redteam9b_cpp_sig33_asm": (*RMSNORM, "POSIX timer(s) of its own"),
    "redteam9b_audit_rearmed_gc": (*RMSNORM, "audit hook"),
    "redteam9b_segv_guard_pages": (*RMSNORM, "the kernel handles SIGSEGV itself"),
}


@pytest.mark.slow
@pytest.mark.parametrize("candidate", sorted(BEHIND_THE_POLICY))
def test_work_the_harness_would_run_for_the_kernel_is_caught_behind_the_policy(
    tmp_path: Path, candidate: str
) -> None:
    operator, shapes, expected = BEHIND_THE_POLICY[candidate]
    result = run_harness(
        tmp_path,
        operator,
        CANDIDATES / candidate,
        shapes,
        seeds=1,
        extra_args=("--no-source-policy",),
        timeout_s=400,
    )
    assert result["status"] == "REWARD_HACK", describe(result)
    assert expected in result["message"], describe(result)


@pytest.mark.slow
def test_the_garbage_collector_as_a_scheduler_gains_nothing(tmp_path: Path) -> None:
    """The near miss: no banned name, no hook, only a generator's `finally` the collector runs; stepping
    the work between harness allocations cost more than the call it saved. Since round 12 the worker's
    collector runs only between the harness's steps (worker.py), never at an allocation: the stepper's
    first step waits for a collection that never comes, and the kernel runs out of memory waiting."""
    operator, shapes = SWIGLU
    # it fills memory while it waits: under a 4 GiB limit that ends in a minute, not three (round 23's
    # CI ran past the 240 s at the worker's default of half a 24 GB host)
    result = run_harness(
        tmp_path, operator, CANDIDATES / "redteam9_gc_stepper_native", shapes, seeds=1,
        timeout_s=420, data_limit=4 << 30,
    )  # fmt: skip
    rows = result["workloads"]
    assert result["status"] in {"REWARD_HACK", "INCORRECT", "RUNTIME_ERROR", "TIMEOUT"} or all(
        w["latency_us"] > w["reference_latency_us"] for w in rows
    ), describe(result)
    assert result["status"] != "PASS" or all(w["latency_us"] is not None for w in rows)


@pytest.mark.slow
def test_a_kernel_wrong_whether_timed_or_not_is_incorrect_not_a_cheat(tmp_path: Path) -> None:
    """A call found wrong after the timing is run again untimed on the same fresh inputs: wrong there too,
    the kernel is wrong (INCORRECT), not one that computes differently when timed (REWARD_HACK)."""
    result = run_harness(
        tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "honest9_buggy_tuned_config", BATCH_170
    )
    assert result["status"] == "INCORRECT", describe(result)
    assert "and so is an untimed call on the same inputs" in result["message"], describe(result)


@pytest.mark.slow
def test_guard_pages_and_a_sigsegv_handler_are_refused_by_the_policy(tmp_path: Path) -> None:
    """redteam9b_segv_guard_pages: the kernel's buffers made read-only (mprotect through ctypes) so that
    the harness's own untimed write faults into a SIGSEGV handler that computes. The policy refuses ctypes
    (behind the policy, the handler's code in anonymous memory is named: BEHIND_THE_POLICY)."""
    operator, shapes = RMSNORM
    result = run_harness(tmp_path, operator, CANDIDATES / "redteam9b_segv_guard_pages", shapes, seeds=1)
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "ctypes" in result["message"], describe(result)
