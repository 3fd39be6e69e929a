"""Red team round 24 (CPU, a helper attacking round 23's host-side fixes): one cheat, two false alarms.

- c05 (cheat): a random operator's host-timed call is seeded with its fresh set's seed, which the
  kernel reads with `torch.initial_seed()`; the seeds of a round's sets were an affine map of the set's
  index, so the first timed call added the step, drew the next four sets itself and computed their
  answers ahead (each later call copied one out; every output was right, and the median of five hid the
  slow first call): 1.8-2.4x on the repo's dropout fixture, ~50x on a larger one, PASS. Now a set's seed
  is a keyed hash of the round's seed and the index (`timing.timed_seed`): no set's seed follows from
  another's, and the kernel never sees the round's seed.
- h06 (false alarm): a destination-passing kernel of an operator whose output rows follow the seed (its
  out= is resized by torch) met the harness's cached output poison of the first shape: RUNTIME_ERROR.
  The poison is drawn again when the outputs' shapes change (Bench._poison_from_pool).
- h01 on a generator whose shapes change on some seeds only (the contract's probe, on consecutive seeds,
  saw none): a timed or re-validation set of another shape met fixed buffers, RUNTIME_ERROR for an honest
  kernel. Eagerly, such a set now takes the buffers' place (Bench.take_set), on a host and in
  re-validation alike.

Left open: a random or seed-shaped operator's burst calls stay unchecked (a kernel can tell them by a
repeated generator seed and skip them; on its own that makes only the burst faster, which no check reads
as a cheat, and with the timed calls unpredictable it gains nothing).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from aka_graph.tools.evaluator.harness.timing import timed_seed
from tests.tools.evaluator.harness.near_tie_support import candidate_source
from tests.tools.evaluator.harness.test_real_benchmark_classes import FIXTURES, evaluate


def test_no_timed_set_seed_follows_from_another() -> None:
    """The step between successive sets' seeds is no constant (the affine map c05 exploited), for any
    round, and both processes still derive the same seed from the same round seed and index."""
    for pool_seed in (0, 7, 2**31 - 1, 123456789):
        seeds = [timed_seed(pool_seed, j) for j in range(6)]
        assert len(set(seeds)) == 6 and all(0 <= s < 2**31 for s in seeds)
        steps = {(b - a) % 2**31 for a, b in itertools.pairwise(seeds)}
        assert len(steps) == 5, steps
        assert seeds == [timed_seed(pool_seed, j) for j in range(6)]
    assert timed_seed(7, 1) - timed_seed(7, 0) != timed_seed(8, 1) - timed_seed(8, 0)


@pytest.mark.slow
def test_a_kernel_predicting_the_next_timed_sets_finds_nothing_to_predict(tmp_path: Path) -> None:
    """c05 checks that its logits are torch.randn of the generator's seed, and only then computes ahead:
    it still may, but its guesses at the next sets now miss, so it is never faster than computing."""
    _, res = evaluate(
        tmp_path, FIXTURES / "random_dropout_sampling", candidate_source("redteam24_c05_predict_next_sets")
    )
    assert res["status"] in ("PASS", "INCORRECT", "REWARD_HACK"), res["message"]
    if res["status"] == "PASS":  # each guess costs it a draw and a computation, and none is used
        for wl in res["workloads"]:
            assert wl["latency_us"] > wl["reference_latency_us"], wl


@pytest.mark.slow
def test_an_honest_out_parameter_kernel_whose_output_rows_follow_the_seed_passes(tmp_path: Path) -> None:
    _, res = evaluate(
        tmp_path, FIXTURES / "r24_ragged_rowwise_out", candidate_source("redteam24_h06_rowwise_out_dps")
    )
    assert res["status"] == "PASS", res["message"]


@pytest.mark.slow
def test_an_honest_kernel_passes_where_shapes_change_on_rare_seeds_only(tmp_path: Path) -> None:
    # (timed and re-validation seeds are hashes: about half of them change the shape here)
    _, res = evaluate(
        tmp_path, FIXTURES / "r24_ragged_rare_tail", candidate_source("redteam23_h01_ragged_honest")
    )
    assert res["status"] == "PASS", res["message"]
