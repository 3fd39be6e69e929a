"""guards.WATCHED_OPS is complete: every aten operator a candidate's worker runs outside the kernel's own
calls is watched.

WATCHED_OPS is written by hand: the aten operators whose dispatch the worker compares before each untimed
step, because a kernel registered for one of them (red team round 9b: its own `aten::copy_`) runs its
code inside the harness's own work. An operator the harness runs but nobody listed is such a door left
open. Here a real evaluation (`python -m harness evaluate`, CPU, honest candidates over fixtures of
varied inputs: floats, integers and bools, custom generators, in-place contracts, expanded inputs, dropout,
scalar outputs) runs with torch's profiler recording every aten operator in the candidate's worker,
leaving out the candidate's own calls (each wrapped in a marked range); each one recorded must be watched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aka_graph.tools.evaluator.harness.guards import WATCHED_OPS
from aka_graph.tools.evaluator.harness.numerics import check_output
from aka_graph.tools.evaluator.harness.opmodel import Tolerance
from aka_graph.tools.evaluator.harness.plausibility import DISAGREEMENT
from tests.conftest import REPO_ROOT, SOL_FIXTURES
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, reference_candidate

HARNESS_DIR = REPO_ROOT / "aka_graph" / "tools" / "evaluator" / "harness"
CANDIDATES = Path(__file__).resolve().parent / "candidates"

# Loaded at start-up by every Python process of the job (PYTHONPATH); acts in the candidate's worker only.
RECORDER = '''
import os

OUT = {out!r}


def _argv():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\\0")]
    except OSError:
        return []


_ARGV = _argv()
if "worker" in _ARGV and "--kernel-dir" in _ARGV:
    import json

    import torch
    from torch.autograd import profiler

    import harness.protocol as _protocol
    import harness.runner as _runner

    MARK = "candidate_call"
    _STATE = {{}}

    def _start():
        _STATE["prof"] = profiler.profile(use_cpu=True)
        _STATE["prof"].__enter__()

    def _in_candidate(event):
        while event is not None:
            if event.name == MARK:
                return True
            event = event.cpu_parent
        return False

    def _flush():
        prof = _STATE["prof"]
        prof.__exit__(None, None, None)
        events = prof.function_events
        ops = sorted({{e.name for e in events if e.name.startswith("aten::") and not _in_candidate(e)}})
        with open(OUT, "a") as f:
            f.write(json.dumps(ops) + "\\n")
        _start()

    _send = _protocol.Channel.send

    def send(self, obj):  # every reply: what the worker ran since the last one
        _flush()
        return _send(self, obj)

    _init = _runner.KernelRunner.__init__

    def init(self, fn, *args, **kwargs):
        _init(self, fn, *args, **kwargs)
        if isinstance(fn, torch.nn.Module):
            forward = fn.forward

            def marked_forward(*a, **k):
                with profiler.record_function(MARK):
                    return forward(*a, **k)

            fn.forward = marked_forward
        else:

            def marked(*a, **k):
                with profiler.record_function(MARK):
                    return fn(*a, **k)

            self.fn = marked

    _protocol.Channel.send = send
    _runner.KernelRunner.__init__ = init
    _start()
'''


def recorded_ops(
    tmp_path: Path, op_dir: Path, kernel_dir: Path, *extra: str, device: str = "cpu"
) -> set[str]:
    """The aten operators the candidate's worker ran outside the candidate's calls, in one evaluation."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(kernel_dir, job / "kernel", ignore=shutil.ignore_patterns("__pycache__"))
    site, out = tmp_path / "site", tmp_path / "ops.jsonl"
    site.mkdir()
    (site / "sitecustomize.py").write_text(RECORDER.format(out=str(out)))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AKA")},
        "PYTHONPATH": f"{job}{os.pathsep}{site}",
        "AKA_WORKER_JAIL": "0",  # the recorder writes outside the worker's scratch directory
        **({"TRITON_INTERPRET": "1"} if device == "cpu" else {}),
    }
    argv = [sys.executable, "-m", "harness", "evaluate", "--op-dir", str(op_dir), "--kernel-dir",
            str(job / "kernel"), "--out", str(job / "result.json"), "--device", device, "--seeds", "2",
            "--no-source-policy", *extra]  # fmt: skip
    proc = subprocess.run(argv, cwd=job, env=env, capture_output=True, text=True, timeout=600)
    result = json.loads((job / "result.json").read_text())
    # the profiler's cost on every operator may make the parent's burst read slower than the worker's own
    # samples: the clocks then disagree, which ends the timing, but everything up to it was recorded
    disagreed = result["status"] == "REWARD_HACK" and DISAGREEMENT in result["message"]
    assert result["status"] == "PASS" or disagreed, (proc.returncode, result["message"], proc.stderr[-2000:])
    assert out.is_file(), "the recorder saw no reply of the candidate's worker"
    return {op for line in out.read_text().splitlines() for op in json.loads(line)}


def reference_kernel(tmp_path: Path, name: str) -> Path:
    kernel = tmp_path / "candidate"
    kernel.mkdir()
    (kernel / "kernel.py").write_text(reference_candidate(FIXTURES / name))
    return kernel


WATCHED = {op.split("::", 1)[1] for op in WATCHED_OPS}  # every overload of each is watched
CASES = {
    "rmsnorm": lambda tmp: (SOL_FIXTURES / "rmsnorm", CANDIDATES / "rmsnorm_torch"),
    **{
        name: (lambda tmp, name=name: (FIXTURES / name, reference_kernel(tmp, name)))
        for name in (
            "int_bool_fp8_dtypes",
            "custom_generator_conventions",
            "kv_cache_inplace",
            "expanded_bias",
            "random_dropout_sampling",
            "scalar_output",
            "r4_python_scalar_outputs",
        )
    },
}


def unwatched_ops(tmp_path: Path, case: str, device: str = "cpu") -> list[str]:
    """The aten ops the worker ran outside the candidate's calls in `case` that WATCHED_OPS leaves out."""
    op_dir, kernel = CASES[case](tmp_path)
    ops = recorded_ops(tmp_path, op_dir, kernel, device=device)
    assert {"aten::copy_", "aten::clone"} <= ops  # the recording really saw the harness's own work
    return sorted(op for op in ops if op.split("::", 1)[1] not in WATCHED)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_aten_operator_the_worker_runs_outside_the_kernel_is_watched(tmp_path: Path, case: str) -> None:
    unwatched = unwatched_ops(tmp_path, case)
    assert unwatched == [], f"aten operators the harness runs that guards.WATCHED_OPS leaves out: {unwatched}"


# The worker's comparison and input checks run on the kernel's outputs and inputs; the recording above sees
# only the branches honest candidates take. Here every branch of numerics.check_output (each case names the
# message its branch gives) and the input fingerprints of every dtype class run under the profiler.
def _branch_cases(device: str) -> list[tuple[str, torch.Tensor, torch.Tensor, Tolerance]]:
    g = torch.Generator().manual_seed(0)
    ref = torch.randn(64, 64, generator=g).to(device)
    nan = ref.clone()
    nan[3, 4] = float("nan")
    ref_inf = ref.clone()
    ref_inf[0, 0] = float("-inf")
    scattered = ref.clone()
    scattered.view(-1)[::97] += 0.05  # a few near misses, scattered
    row = ref.clone()
    row[5] += 0.05  # one whole row off by a little
    column = ref.clone()
    column[:, 7] += 0.05  # one whole feature off by a little
    tail = ref.clone()
    tail.view(-1)[-200:] += 0.05  # the last elements in memory order, but fewer than a line of rows
    loose = Tolerance(matched_ratio=0.9)
    ints = torch.randint(0, 9, (64, 64), generator=g).to(device)
    flipped = ints.clone()
    flipped[0, :3] += 1
    return [
        ("pass", ref.clone(), ref, Tolerance()),
        ("empty", ref[:0], ref[:0], Tolerance()),
        ("NaN", nan, ref, Tolerance()),
        ("-inf allowed", ref_inf.clone(), ref_inf, Tolerance(allow_negative_inf=True)),
        ("non-finite values the output lacks", ref.clone(), ref_inf, Tolerance()),
        ("all zeros", torch.zeros_like(ref), ref, Tolerance()),
        ("of elements within", ref + 1.0, ref, Tolerance()),
        ("exceeds the cap", scattered, ref, Tolerance(atol=0.1, error_cap=0.01)),
        ("16x their tolerance", ref + (ref.abs() < 0.01) * 5.0, ref, loose),
        ("rows are mostly wrong", row, ref, loose),
        ("columns are mostly wrong", column, ref, loose),
        ("consecutive elements", tail.reshape(-1), ref.reshape(-1), loose),
        ("discrete", flipped, ints, Tolerance(atol=0, rtol=0, matched_ratio=0.99)),
        ("complex", torch.complex(ref, ref), torch.complex(ref, ref), Tolerance()),
    ]


def comparison_ops(device: str) -> tuple[set[str], dict[str, str]]:
    """Every aten operator numerics.check_output and the input fingerprints run, on `device`, and each
    branch case's message (so a case that stopped reaching its branch shows)."""
    from torch.autograd import profiler

    from aka_graph.tools.evaluator.harness.fingerprint import InputSnapshot

    cases = _branch_cases(device)
    inputs = [
        torch.randn(5, 3, device=device),
        torch.ones(3, device=device).expand(4, 3),  # stride 0
        torch.zeros(7, dtype=torch.bool, device=device),
        torch.zeros(4, dtype=torch.complex64, device=device),
        torch.arange(9, dtype=torch.int32, device=device),
        torch.zeros(0, device=device),
        3,
    ]
    messages = {}
    with profiler.profile(use_cpu=True) as prof:
        for name, got, ref, tol in cases:
            messages[name] = check_output("out", got, ref, tol).message
        for exact in (True, False):
            snapshot = InputSnapshot(inputs, exact=exact)
            inputs[0].add_(1.0)
            assert snapshot.changed(inputs) == [0]
            inputs[0].sub_(1.0)
    return {e.name for e in prof.function_events if e.name.startswith("aten::")}, messages


def unwatched_comparison_ops(device: str) -> list[str]:
    ops, messages = comparison_ops(device)
    for name, message in messages.items():
        # "discrete": 3 of 4096 off by one, within the ratio, and integers have no near-miss bound
        if name in ("pass", "empty", "-inf allowed", "complex", "discrete"):
            assert message == "", (name, message)
        else:
            assert name in message, (name, message)
    assert {"aten::isfinite", "aten::cumsum"} <= ops  # the recording really saw the comparison
    return sorted(op for op in ops if op.split("::", 1)[1] not in WATCHED)


def test_every_aten_operator_of_every_comparison_branch_and_input_check_is_watched() -> None:
    unwatched = unwatched_comparison_ops("cpu")
    assert unwatched == [], f"aten operators the comparison runs that WATCHED_OPS leaves out: {unwatched}"
