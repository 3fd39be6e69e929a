"""Red team, round nine: the parent's timing burst is checked for correctness (candidates/redteam9_*).

- redteam9_burst_skipper: an rmsnorm that computes every call the harness checks and skips every call of
  the parent's timing burst, told from the call pattern (back-to-back calls). This was the enabler of
  round 8's cheats: work moved out of the timed calls (a SIGALRM handler, a hidden thread) shows in the
  burst, the parent's own clock, unless the burst's calls skip it, and nothing checked a burst's outputs.
  Now an eager burst runs on fresh input sets drawn from the burst's salt, keeps every call's outputs,
  and the parent compares calls it draws afterwards with the reference (spotcheck.verify_burst_calls).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, SOL_FIXTURES, describe, run_harness

BATCH_170 = ["b010c7f2-801d-41c0-b5d0-be619ecb4090"]  # a call of a few hundred us


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["on", "off"])
def test_a_kernel_that_skips_the_parents_burst_is_caught_by_the_bursts_outputs(
    tmp_path: Path, policy: str
) -> None:
    extra = () if policy == "on" else ("--no-source-policy",)
    result = run_harness(
        tmp_path, SOL_FIXTURES / "rmsnorm", CANDIDATES / "redteam9_burst_skipper", BATCH_170, extra_args=extra
    )
    assert result["status"] == "REWARD_HACK", describe(result)
    assert "of the parent's timing burst" in result["message"], describe(result)
