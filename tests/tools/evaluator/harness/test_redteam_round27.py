"""Red team round 27 (CPU, a helper attacking the day's host-side changes: seed-shaped reference timing
(modes._timed_on_other_shapes, refcache.seed_shaped_timings), the bench-set cache key
(refcache.bench_set_key) and cold-cache host timing (timing.flush_host_caches)).

- h01 (honest, badly wrong speed-up: a HOLE, fixed the same day: an operator with its own generator has
  its reference timed on this evaluation's sets and never cached, refcache.reference_timings): the
  seed-shaped check compared the timed sets' *shapes* with
  the bench set's. An operator whose generator keeps every shape fixed but lets the seed decide how much
  of the batch is valid (a padded serving batch: `offsets[-1]` rows of a fixed buffer, a prefill on a
  rare seed) is never taken for seed-shaped: the reference is timed on the bench's one set, the kernel
  on its fresh sets. Where the bench's seed drew the rare long batch, the reference itself as the
  candidate reads many times faster than the reference (measured: 5.70x with a fresh cache; the
  control, a short bench set, 0.5-1x; and 5.45x in a short-bench evaluation after a long-bench one
  filled the cache) (the bench seed is forced here, a parent-side
  patch of Session.draw_seeds, so that the run is deterministic; unforced it happens on 1 evaluation in
  16 with this fixture, 1 in 3 with r25rt_bimodal_ragged's rate). bench_set_key has the same blind
  spot: the shapes are the key, so a cached figure from a long bench set answers for later evaluations.
- c02 (policy off only): the worker's flush buffer is `timing._FLUSH[("cpu", -1)]`, an entry of a dict
  whose *binding* the Sentinel compares; replacing the entry (or `resize_`-ing the tensor) is seen by no
  in-worker check, so the candidate's timed calls run warm while the parent times the reference cold.
  The source policy refuses the `sys` import that reaches it (held behind the policy); the in-process
  edit itself is the known-open class of guards.py's docstring. Policy off on rmsnorm 257 x 4096 (one
  run each): PASS at 749 us against the reference's 983 us (1.31x), the same kernel with the flush
  left alone 947 us (1.04x).
- c03 (policy off only): `_timed_on_other_shapes` takes the number of sets to draw from the worker's
  `pool_size`; the docstring's "nothing here rests on the worker's word" does not hold for it. A reply
  with pool_size 1 has the parent look at set 0 only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_graph.tools.evaluator.harness import modes, timing
from aka_graph.tools.evaluator.harness.guards import Sentinel
from aka_graph.tools.evaluator.harness.policy import scan_source
from aka_graph.tools.evaluator.harness.timing import timed_seed
from tests.tools.evaluator.harness.near_tie_support import candidate_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import HARNESS_DIR

HEAVY_EVERY = 16  # one seed in this many draws the long (prefill) batch

GENERATOR = f"""import torch

def gen(axes_and_scalars, device):
    # a padded serving batch: a fixed buffer of N rows, of which offsets[-1] are valid: 128 on most
    # seeds, all N on one seed in {HEAVY_EVERY} (a prefill step). Every shape is the same on every seed.
    R, D, N = axes_and_scalars['R'], axes_and_scalars['D'], axes_and_scalars['N']
    n = N if torch.initial_seed() % {HEAVY_EVERY} == 0 else 128
    lens = torch.full((R,), n // R, dtype=torch.int64)
    lens[-1] += n - int(lens.sum())
    offsets = torch.cat([lens.new_zeros(1), lens.cumsum(0)]).to(torch.int32)
    return {{'values': torch.randn(N, D, device=device), 'offsets': offsets}}
"""


def padded_reference() -> str:
    """The operator's reference: its generator, then the `run` of the honest candidate (the reference
    itself as candidate, held once: candidates/redteam27_h01_padded_reference)."""
    kernel = candidate_source("redteam27_h01_padded_reference")
    run = kernel[kernel.index("def run(") : kernel.index("DESTINATION_PASSING_STYLE")]
    return GENERATOR + "\n\n" + run.rstrip() + "\n"


def padded_fixture(root: Path, rows: int = 65536) -> Path:
    """The operator, its one workload a buffer of `rows` rows (a GPU needs more for the long batch's
    device time to outweigh the reference's host round trips)."""
    op = root / "r27_padded_bimodal"
    op.mkdir(parents=True)
    definition = {
        "name": "r27_padded_bimodal",
        "op_type": "ragged",
        "description": "Segment sums over the valid rows of a fixed padded buffer; the valid count "
        "follows the seed.",
        "axes": {
            "R": {"type": "var"},
            "D": {"type": "const", "value": 128},
            "N": {"type": "var"},
            "R1": {"type": "expr", "expression": "R + 1"},
        },
        "custom_inputs_entrypoint": "gen",
        "inputs": {
            "values": {"shape": ["N", "D"], "dtype": "float32"},
            "offsets": {"shape": ["R1"], "dtype": "int32"},
        },
        "outputs": {"sums": {"shape": ["R", "D"], "dtype": "float32"}},
        "reference": padded_reference(),
    }
    (op / "definition.json").write_text(json.dumps(definition))
    custom = {"type": "custom"}
    wl = {"uuid": "pad-r4", "axes": {"R": 4, "N": rows}, "inputs": {"values": custom, "offsets": custom}}
    (op / "workload.jsonl").write_text(json.dumps(wl) + "\n")
    return op


DRIVER = """import sys
from harness import session
_draw = session.Session.draw_seeds
def draw_seeds(self):
    _draw(self)
    self.bench_seed = {bench_seed}
session.Session.draw_seeds = draw_seeds
{fresh}
from harness.cli import main
sys.argv = ["harness", *sys.argv[1:]]
raise SystemExit(main())
"""

# the parent's fresh seeds (pool seeds among them) drawn so that no timed set is the long batch: the
# kernel's own sets are then the usual ones, and only the bench seed decides what a bench-set figure is
USUAL_FRESH_SETS = """import itertools
from harness import modes, timing
_next = itertools.count(1000)
def fresh_seed():
    while True:
        p = next(_next)
        if all(timing.timed_seed(p, j) % {every} for j in range(64)):
            return p
modes.fresh_seed = fresh_seed
"""


def evaluate_with_bench_seed(
    tmp_path: Path,
    op_dir: Path,
    source: str,
    bench_seed: int,
    cache: Path | None = None,
    device: str = "cpu",
    usual_sets: bool = False,
) -> dict[str, Any]:
    """test_real_benchmark_classes.evaluate, with the parent's bench seed forced (a patch of the trusted
    parent, in the test only: the worker gets the seed from the parent's request); `usual_sets`: every
    timed set the usual short batch (USUAL_FRESH_SETS)."""
    job = tmp_path / f"job{bench_seed}"
    shutil.copytree(HARNESS_DIR, job / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    (job / "kernel").mkdir()
    (job / "kernel" / "kernel.py").write_text(source)
    env = {**os.environ, "AKA_CACHE_DIR": str(cache or tmp_path / "cache")}  # no other test's figures
    fresh = USUAL_FRESH_SETS.format(every=HEAVY_EVERY) if usual_sets else ""
    (job / "drive.py").write_text(DRIVER.format(bench_seed=bench_seed, fresh=fresh))
    proc = subprocess.run(
        [sys.executable, "drive.py", "evaluate", "--op-dir", str(op_dir), "--kernel-dir", str(job / "kernel"),
         "--out", str(job / "result.json"), "--device", device, "--seeds", "3"],
        cwd=job, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    result = job / "result.json"
    assert result.is_file(), f"exit {proc.returncode}, no result.json: {proc.stderr[-3000:]}"
    return json.loads(result.read_text())


def honest_source() -> str:
    return candidate_source("redteam27_h01_padded_reference")


def speedups(res: dict[str, Any]) -> list[float]:
    return [w["reference_latency_us"] / w["latency_us"] for w in res["workloads"]]


@pytest.mark.slow
def test_the_reference_itself_reads_about_as_fast_as_the_reference_when_the_bench_drew_the_long_batch(
    tmp_path: Path,
) -> None:
    res = evaluate_with_bench_seed(tmp_path, padded_fixture(tmp_path), honest_source(), 7 * HEAVY_EVERY)
    assert res["status"] == "PASS", res["message"]
    assert all(0.25 < s < 4.0 for s in speedups(res)), (speedups(res), res["workloads"])


@pytest.mark.slow
def test_a_cached_figure_from_a_long_bench_set_does_not_answer_for_a_short_one(tmp_path: Path) -> None:
    op, cache = padded_fixture(tmp_path), tmp_path / "shared-cache"
    evaluate_with_bench_seed(tmp_path, op, honest_source(), 7 * HEAVY_EVERY, cache)  # fills the cache
    res = evaluate_with_bench_seed(tmp_path, op, honest_source(), 7 * HEAVY_EVERY + 1, cache)
    assert res["status"] == "PASS", res["message"]
    if not res["reference_timing_cache"].get("used"):
        pytest.skip("no reference-timing cache on this host (the worker is not jailed)")
    assert all(0.25 < s < 4.0 for s in speedups(res)), (speedups(res), res["workloads"])


@pytest.mark.slow
def test_the_same_run_reads_about_one_when_the_bench_drew_the_usual_batch(tmp_path: Path) -> None:
    """The control: a bench seed of the usual (short) batch, as fresh sets draw on 15 seeds in 16."""
    res = evaluate_with_bench_seed(tmp_path, padded_fixture(tmp_path), honest_source(), 7 * HEAVY_EVERY + 1)
    assert res["status"] == "PASS", res["message"]
    assert all(0.25 < s < 4.0 for s in speedups(res)), (speedups(res), res["workloads"])


# --- c02: the flush buffer, edited in place (policy off) -----------------------------------------------


def test_the_policy_refuses_the_kernel_that_empties_the_workers_flush_buffer() -> None:
    """Held behind the policy: the only way to the worker's `_FLUSH` is through `sys` (or `gc`)."""
    source = candidate_source("redteam27_c02_warm_timed_calls")
    problems = scan_source(source, "kernel.py")
    assert any("imports 'sys'" in p for p in problems), problems


@pytest.mark.xfail(
    strict=True,
    reason="hole (policy off only): the Sentinel compares the binding of timing._FLUSH, not its entries; "
    "a kernel that swaps the flush buffer for one byte runs its timed calls warm, unseen in the worker",
)
def test_an_emptied_flush_buffer_is_seen_by_the_workers_checks() -> None:
    timing.flush_host_caches()
    key = ("cpu", -1)
    real = timing._FLUSH[key]
    sentinel = SimpleNamespace(bindings={(timing.__name__, "_FLUSH"): timing._FLUSH})
    try:
        timing._FLUSH[key] = torch.zeros(1, dtype=torch.uint8)  # what c02 does at import
        assert Sentinel.rebound(sentinel)  # type: ignore[arg-type]
    finally:
        timing._FLUSH[key] = real


# --- c03: the set count the parent draws comes from the worker's reply -----------------------------------


class _Ref:
    seed_may_shape = True

    def __init__(self, long_seeds: set[int]) -> None:
        self.long_seeds = long_seeds
        self.asked: list[int] = []

    def shapes_differ(self, idx: int, seed: int, bench_seed: int) -> bool:
        self.asked.append(seed)
        return seed in self.long_seeds


def _session(ref: _Ref) -> Any:
    return SimpleNamespace(contract={}, reference=ref, bench_seed=1)


def test_every_timed_set_is_drawn_by_the_parent_when_the_worker_reports_its_pool_truly() -> None:
    ref = _Ref({timed_seed(99, 3)})  # only the fourth set is long
    assert modes._timed_on_other_shapes(_session(ref), 0, 99, 5, {"pool_size": 5})


@pytest.mark.xfail(
    strict=True,
    reason="hole (a reply edited in the worker, policy off): the count of sets the parent draws is "
    "min(calls, the worker's pool_size); a reply saying 1 has it look at set 0 only",
)
def test_a_reply_that_under_reports_its_pool_does_not_hide_a_long_timed_set() -> None:
    ref = _Ref({timed_seed(99, 3)})
    assert modes._timed_on_other_shapes(_session(ref), 0, 99, 5, {"pool_size": 1})
