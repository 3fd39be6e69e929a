"""Red team round 29 (CPU, a helper attacking the day's host-side changes: the reference timed on a
kernel's own timed sets (trusted.Reference.time_on_sets, refcache._all_on_own_sets), the burst weighed by
its sets' bytes after a disagreement (spotcheck.set_scale, plausibility.check) and the default CPU
evaluation's time budget (cpu_budget.py)). Measured on this 2-core host, one evaluation at a time.

- h01 (honest flagged REWARD_HACK: a HOLE, closed the same day: set_scale now also weighs a burst's sets
  by the reference's own time on them, and the forced test passes 3 of 3): set_scale weighed a burst by
  its sets' *bytes*, and burst_basis by the mean of the round's five timed calls. An operator whose
  generator keeps every shape (so every set's bytes) fixed but lets the seed decide the work
  (r29_padded_attention: a padded batch, one token per request on most seeds, a full prefill of 2048 rows
  on one seed in E, then self-attention over the valid rows: ~0.1 ms against ~27 ms a call) has sets small
  enough (1 MiB) that each burst stages ~50-80 fresh sets. When a round's five timed calls all drew the
  short batch and the check's three bursts each drew prefills enough, the burst reads 2.5-8.5x the
  reported latency (E=16; 15-22x at E=4), the weighing finds scale 1.0 (same bytes), and after two retries
  the reference itself is called REWARD_HACK ("the reported timing was tampered with"). Unforced, E=16: 3
  of 12 evaluations of the reference as candidate on an idle host (2 of 8 more beside another process's
  load); its timed calls are all short in 0.72 of rounds. Round 27's r27_padded_bimodal escapes it only
  because its 32 MiB sets are too large to stage, and its bursts then run on the bench's one set. The test
  runs `pa-e4` with the bench's set and the timed sets forced short (parent-side patches of
  Session.draw_seeds and modes.fresh_seed, as round 27's); the burst's salt stays os.urandom: 3 of 3 runs
  REWARD_HACK.
- h02 (honest refused INFRA_ERROR: a HOLE, closed the same day: for an operator whose generator may shape
  the work by the seed, a refusal now waits for a call on another seed's set): the CPU budget judged the
  faster of the contract probe's first two reference calls, and both run on the same inputs, drawn from
  the init seed. Where the operator's generator lets the seed decide the work (a prefill on one seed in 64
  here), an init seed that draws the rare set is extrapolated to the whole evaluation: with --cpu-budget-s
  25, "would take at least 29 s" (a 1.2 s call), while the same evaluation unbudgeted took 5.7 s in all
  (the probe's long calls included) and 2.2 s with a usual init seed. At the default 600 s the same
  happens to a rare set of >= 26 s a call; the refusal rate is the rare set's rate (1 in 64 here, 1 in 16
  for round 27's fixture).
- h03 (honest evaluation grinding past any budget: a HOLE of cost, not of verdict): the fresh timed
  sets of a round are capped by what the generator draws in ~2 s (memory.generator_sets), and the
  correctness seeds by 3 s of draws, but the worker's `burst_inputs` stages one fresh set per burst call
  whatever a draw costs: ~110 calls for a 170 us kernel. With a generator of 0.2 s a draw the timing
  phase took 29.5 s, 26.0 s of it in the burst (the same at 0.5 s a draw: 79 s for the evaluation).
  cpu_budget.py never sees it (it times the reference's calls, ~0.1 ms here).

Not a hole found (reasoned through, no candidate run): exploiting set_scale to hide work needs a kernel
whose *timed* calls are cheaper than its burst calls on the host, where the kept latency is the parent's
own CPU-time reading of each call and the timed calls' outputs are spot-checked; no channel for work
outside the call windows was found past the policy and the between-step guards (collection before the
next set's write, planted members, threads, signal handlers). The weighing only loosens the cross-check
of such work, and so does burst_basis's mean, which a kernel can raise at will by burning CPU in one of
its five timed calls (the kept median stays): the cross-check is then off for it. Worth closing if a
hidden-work channel ever turns up; no gain without one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aka_graph.tools.evaluator.harness import session as session_module
from aka_graph.tools.evaluator.harness.session import Session, Settings
from aka_graph.tools.evaluator.harness.timing import HOST_REPS
from tests.tools.evaluator.harness.near_tie_support import candidate_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, HARNESS_DIR, evaluate

PADDED = FIXTURES / "r29_padded_attention"
RARE_PREFILL = FIXTURES / "r29_rare_prefill_budget"
SLOW_GENERATOR = FIXTURES / "r29_slow_generator_burst"


def _reference(op_dir: Path) -> str:
    return str(json.loads((op_dir / "definition.json").read_text())["reference"])


# --- h01: a padded batch whose work, not bytes, follows the seed ---------------------------------------

DRIVER = """import itertools, sys
from harness import modes, session, timing
_draw = session.Session.draw_seeds
def draw_seeds(self):
    _draw(self)
    self.bench_seed = {bench_seed}  # the bench's own set: the short batch
session.Session.draw_seeds = draw_seeds
_next = itertools.count(1000)
def fresh_seed():  # pool seeds whose {reps} timed sets are all the short batch
    while True:
        p = next(_next)
        if all(timing.timed_seed(p, j) % {every} for j in range({reps})):
            return p
modes.fresh_seed = fresh_seed
from harness.cli import main
sys.argv = ["harness", *sys.argv[1:]]
raise SystemExit(main())
"""


def evaluate_short_timed_sets(tmp_path: Path, op_dir: Path, source: str, shape_id: str, every: int) -> dict:
    """test_real_benchmark_classes.evaluate with two parent-side patches (the test's own, never the
    worker's): the bench seed and every timed call's fresh set draw the short batch. The burst's salt is
    the parent's os.urandom as always."""
    job = tmp_path / "job"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    (job / "kernel").mkdir()
    (job / "kernel" / "kernel.py").write_text(source)
    (job / "drive.py").write_text(DRIVER.format(bench_seed=every * 7 + 1, every=every, reps=HOST_REPS))
    env = {**os.environ, "AKA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "drive.py", "evaluate", "--op-dir", str(op_dir), "--kernel-dir", str(job / "kernel"),
         "--out", str(job / "result.json"), "--device", "cpu", "--seeds", "3", "--shape-id", shape_id],
        cwd=job, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    result = job / "result.json"
    assert result.is_file(), f"exit {proc.returncode}, no result.json: {proc.stderr[-3000:]}"
    return dict(json.loads(result.read_text()))


def test_the_padded_fixture_keeps_every_set_the_same_size_and_lets_the_seed_decide_the_work() -> None:
    """What h01 rests on: set_scale can only say 1.0 for this operator (the buffer's rows are N on every
    seed); the valid rows are all N on one seed in E (16 and 4 in its two workloads)."""
    reference = _reference(PADDED)
    assert "torch.initial_seed() % E == 0" in reference
    assert "torch.randn(N, D" in reference
    lines = (PADDED / "workload.jsonl").read_text().splitlines()
    assert [json.loads(line)["axes"]["E"] for line in lines] == [16, 4]


@pytest.mark.slow
def test_an_honest_kernel_on_a_padded_batch_passes_when_its_timed_calls_drew_the_short_batch(
    tmp_path: Path,
) -> None:
    """pa-e4: a prefill on one seed in 4, so every burst of ~50-80 fresh sets holds some (deterministic
    here); unforced, pa-e16's timed calls are all short in 0.72 of rounds and the reference itself was
    REWARD_HACK in 3 of 12 evaluations (idle host)."""
    source = candidate_source("redteam29_h01_padded_attention")
    res = evaluate_short_timed_sets(tmp_path, PADDED, source, "pa-e4", every=4)
    assert res["status"] == "PASS", res["message"]
    # cleared by weighing the burst's sets by the reference's time on them, and said so
    assert "in the reference's time on them" in res["workloads"][0]["message"], res["workloads"][0]


# --- h02: the CPU budget judged on an init seed that drew the rare set ---------------------------------

PREFILL_EVERY = 64
LONG_INIT_SEED = PREFILL_EVERY * 1234  # draws the prefill (8192 valid rows): ~1.2 s a reference call
USUAL_INIT_SEED = PREFILL_EVERY * 1234 + 1  # one token per request: ~ms
BUDGET_S = 25.0  # the unbudgeted evaluation with the long init seed took 5.7 s here, probe included


def _session_with_init_seed(monkeypatch: pytest.MonkeyPatch, init_seed: int) -> Session:
    """A default CPU session (budgeted: no --shape-id, no --all-workloads) whose reference's init seed
    (the contract probe's inputs) is forced; every later seed is drawn as usual."""
    first = [init_seed]
    real = session_module.fresh_seed
    monkeypatch.setattr(session_module, "fresh_seed", lambda: first.pop() if first else real())
    return Session(Settings(op_dir=RARE_PREFILL, device="cpu", cpu_budget_s=BUDGET_S))


def test_the_rare_prefill_fixture_draws_the_prefill_on_one_seed_in_64() -> None:
    assert f"torch.initial_seed() % {PREFILL_EVERY} == 0" in _reference(RARE_PREFILL)


@pytest.mark.slow
def test_a_usual_init_seed_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the probe's calls on the usual batch are milliseconds, never extrapolated."""
    session = _session_with_init_seed(monkeypatch, USUAL_INIT_SEED)
    assert session.contract["stochastic"] is False


@pytest.mark.slow
def test_an_init_seed_that_drew_the_rare_prefill_does_not_refuse_an_evaluation_that_fits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = _session_with_init_seed(monkeypatch, LONG_INIT_SEED)
    assert session.contract["stochastic"] is False


# --- h03: a slow generator's draws staged for every burst call ----------------------------------------


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="hole (cost): worker.burst_inputs stages one fresh set per burst call (~110 for a fast kernel) "
    "whatever the generator's draw costs; at 0.2 s a draw the burst alone took 26 s of a 29.5 s timing "
    "phase, unseen by the CPU budget",
)
def test_a_slow_generators_draws_do_not_dominate_the_timing_of_a_fast_kernel(tmp_path: Path) -> None:
    code, res = evaluate(tmp_path, SLOW_GENERATOR, candidate_source("redteam29_h03_slow_generator"))
    assert code == 0 and res["status"] == "PASS", res["message"]
    # the timed sets' cap (memory.GENERATION_BUDGET_S, 2 s of draws a round) and the parent's own checks'
    # draws (3 timed calls, 12 burst calls, re-validation, sizing) leave well under 15 s at 0.2 s a draw
    spans: dict[str, Any] = res["spans_s"]
    assert spans["timing.burst"]["s"] < 10.0, spans["timing.burst"]
    assert res["phases_s"]["timing"] < 15.0, res["phases_s"]
