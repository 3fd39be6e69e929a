"""GPU: guards.WATCHED_OPS is complete on the CUDA path too (graph capture, device copies, CUDA-event timing).

The same recording as tests/tools/evaluator/harness/test_watched_ops.py (torch's profiler in the
candidate's worker, the candidate's own calls left out), with `--device cuda`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.evaluator.harness.test_watched_ops import CASES, unwatched_comparison_ops, unwatched_ops

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_aten_operator_the_gpu_worker_runs_outside_the_kernel_is_watched(
    tmp_path: Path, case: str
) -> None:
    unwatched = unwatched_ops(tmp_path, case, device="cuda")
    assert unwatched == [], (
        f"aten operators the harness runs on CUDA that guards.WATCHED_OPS leaves out: {unwatched}"
    )


def test_every_aten_operator_of_every_comparison_branch_and_input_check_is_watched_on_cuda() -> None:
    unwatched = unwatched_comparison_ops("cuda")
    assert unwatched == [], f"aten ops the CUDA comparison runs that WATCHED_OPS leaves out: {unwatched}"
