"""Round eleven: what the H200's recording of the worker found, and complex outputs (candidates/
redteam11_*, honest11_*).

- A native Model may return a complex tensor (torch.fft; tests/fixtures/native_complex_spectrum). The
  worker's channel refused complex dtypes, so the honest reference was REWARD_HACK ("the worker's reply
  was malformed"), and the comparison cast complex outputs to float32, which keeps the real part only: a
  kernel that never computed the imaginary part would have passed once the channel carried them.
- honest11_complex_spectrum: the same spectrum written another way; it must PASS.
- redteam11_complex_real_part_only: the real part right, the imaginary part zero; it must be INCORRECT.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_adversarial import CANDIDATES, describe, run_harness

SPECTRUM = Path(__file__).resolve().parents[3] / "fixtures" / "native_complex_spectrum"


@pytest.mark.slow
def test_an_honest_complex_output_passes(tmp_path: Path) -> None:
    result = run_harness(tmp_path, SPECTRUM, CANDIDATES / "honest11_complex_spectrum", None)
    assert result["status"] == "PASS", describe(result)
    assert len(result["workloads"]) == 2 and all(w["status"] == "PASS" for w in result["workloads"])


@pytest.mark.slow
def test_a_complex_output_with_only_its_real_part_right_is_incorrect(tmp_path: Path) -> None:
    result = run_harness(tmp_path, SPECTRUM, CANDIDATES / "redteam11_complex_real_part_only", None)
    assert result["status"] == "INCORRECT", describe(result)
    assert "of elements within" in result["message"], describe(result)
